/**
 * A valid Automerge change chunk that inserts `n` characters into a new
 * text object at the root key `text` (what `A.change(doc, d => { d.text =
 * chars })` produces), written directly in Automerge's columnar change
 * format instead of through Automerge, which takes about 25 s and 3 GiB to
 * build a 10-million-character one. Every column but the raw values is
 * run-length encoded, so the chunk is `n` bytes plus about 100.
 * automerge-change.test.ts checks the output byte for byte against
 * Automerge's own for several sizes. (Run lengths are signed LEB128, null
 * runs `0` then an unsigned count, booleans alternating unsigned counts.)
 */
import { createHash } from 'node:crypto'
import { concatBytes } from '../helpers/bytes.ts'

function uleb(value: number): number[] {
  const out: number[] = []
  do {
    let byte = value % 128
    value = Math.floor(value / 128)
    if (value > 0) byte |= 0x80
    out.push(byte)
  } while (value > 0)
  return out
}

function sleb(value: number): number[] {
  const out: number[] = []
  for (;;) {
    const byte = ((value % 128) + 128) % 128
    value = Math.floor(value / 128)
    const done = (value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)
    out.push(done ? byte : byte | 0x80)
    if (done) return out
  }
}

const MAGIC = [0x85, 0x6f, 0x4a, 0x83]
const CHANGE_CHUNK = 1

/**
 * The change chunk (magic, checksum, type, length, body) by `actor` (hex,
 * even length), seq 1, time 0, inserting `chars` (ASCII, at least 4).
 */
export function textInsertChange(chars: string, actor: string): Uint8Array {
  const n = chars.length
  if (n < 4 || !/^[\x20-\x7e]*$/.test(chars)) throw new RangeError('textInsertChange: at least 4 printable ASCII characters')
  const text = [...new TextEncoder().encode('text')]
  const columns: Array<[number, number[] | Uint8Array]> = [
    [0x01, [0, 1, ...sleb(n), 0]], // obj actor: null (root), then n x actor 0
    [0x02, [0, 1, ...sleb(n), 1]], // obj counter: null, then n x 1 (the text object is op 1)
    [0x11, [0, 2, ...sleb(n - 1), 0]], // key actor: null (map key), null (_head), then actor 0
    [0x13, [0, 1, ...sleb(-2), 0, 2, ...sleb(n - 2), 1]], // key counter, delta: null, [0, 2], then +1 each
    [0x15, [...sleb(-1), text.length, ...text, 0, ...uleb(n)]], // key string: "text", then n nulls
    [0x34, [1, ...uleb(n)]], // insert: 1 false, then n true
    [0x42, [...sleb(-1), 4, ...sleb(n), 1]], // action: makeText, then n x set
    [0x56, [...sleb(-1), 0, ...sleb(n), 0x16]], // value metadata: null, then n x (1-byte string)
    [0x57, new TextEncoder().encode(chars)], // raw values
    [0x70, [...sleb(n + 1), 0]], // pred group: none
  ]
  const actorBytes = Buffer.from(actor, 'hex')
  const head = [
    0, // dependencies
    ...uleb(actorBytes.length),
    ...actorBytes,
    1,
    1,
    0,
    0,
    0, // seq, start op, time, message (none), other actors
    ...uleb(columns.length),
    ...columns.flatMap(([spec, data]) => [...uleb(spec), ...uleb(data.length)]),
  ]
  const body = concatBytes([new Uint8Array(head), ...columns.map(([, data]) => (data instanceof Uint8Array ? data : new Uint8Array(data)))])
  const typed = concatBytes([new Uint8Array([CHANGE_CHUNK, ...uleb(body.length)]), body])
  const checksum = createHash('sha256').update(typed).digest().subarray(0, 4)
  return concatBytes([new Uint8Array(MAGIC), checksum, typed])
}
