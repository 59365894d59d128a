/**
 * The export formats of `concord export` / `concord import`.
 *
 * Both carry, per name, its type and its whole state as a delta (what an
 * empty replica lacks: `replica.deltaSince(emptyVersion)`), so importing is
 * a join: into an empty folder it gives back exactly the exported state.
 *
 * **JSON Lines** (human-readable): a header line
 * `{"format":"concord-export","version":1,"source":ID,"exported":ISO,"names":N}`
 * then one line per name
 * `{"name":...,"type":...,"value":<the value as JSON>,"state":"<base64>"}`.
 * `value` is for people (and checked on import); `state` is authoritative.
 *
 * **Binary**: `u8 1 | raw4 "CXPT" | string source | varuint exported (ms) |
 * count | (string name | string type | bytes state)* | u32 crc32` — strings
 * and bytes varuint-length-prefixed (crdt/codec.ts); the CRC-32 (big-endian)
 * covers everything before it. Its first byte (1) tells it from JSON Lines
 * (`{`).
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../crdt/errors.ts'
import { isRegisteredType } from '../crdt/registry.ts'
import { MAX_JSON_DEPTH, nestingExceeds } from '../crdt/types/json.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { openChecksummed, sealWithChecksum } from '../persistence/format/checksum.ts'

/** Deepest nesting of one JSON Lines line: a map of nested maps of JSON values stays well within it. */
const MAX_LINE_NESTING = 4 * MAX_JSON_DEPTH

/** Version byte of both formats. */
export const DUMP_VERSION = 1
const MAGIC = new TextEncoder().encode('CXPT')
/** `format` of the JSON Lines header. */
export const JSONL_FORMAT = 'concord-export'

/** One exported name. */
export interface DumpEntry {
  readonly name: string
  readonly type: ReplicaType
  /** The whole state as a delta. */
  readonly state: Uint8Array
  /** The value as JSON (JSON Lines only; informative). */
  readonly value?: unknown
}

/** A whole export. */
export interface Dump {
  /** Agent id of the exporting folder. */
  readonly source: string
  /** Wall time of the export, ms. */
  readonly exported: number
  readonly entries: readonly DumpEntry[]
}

/** The two formats. */
export type DumpFormat = 'jsonl' | 'binary'

/** Encodes a dump in the binary format. */
export function encodeBinaryDump(dump: Dump): Uint8Array {
  const encoder = new Encoder(1024).writeUint8(DUMP_VERSION).writeRaw(MAGIC).writeString(dump.source).writeVarUint(dump.exported)
  encoder.writeVarUint(dump.entries.length)
  for (const entry of dump.entries) encoder.writeString(entry.name).writeString(entry.type).writeBytes(entry.state)
  return sealWithChecksum(encoder.finish())
}

/** Decodes the binary format; `CONCORD_DECODE_ERROR` on anything malformed. */
export function decodeBinaryDump(bytes: Uint8Array): Dump {
  const body = openChecksummed(bytes)
  if (!body) throw new DecodeError('concord export: truncated or checksum mismatch')
  if (body[0] > DUMP_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `concord export: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readVersion(DUMP_VERSION, 'concord export')
    const magic = d.readRaw(MAGIC.length)
    if (!magic.every((byte, i) => byte === MAGIC[i])) throw new DecodeError('concord export: not a Concord export (bad magic)')
    const source = d.readString()
    const exported = d.readVarUint()
    const count = d.readCount(3)
    const entries: DumpEntry[] = []
    for (let i = 0; i < count; i++) {
      const name = d.readString()
      const type = d.readString()
      if (!isRegisteredType(type)) throw new DecodeError(`concord export: unknown type "${type}" for "${name}"`)
      entries.push({ name, type, state: d.readBytes().slice() })
    }
    d.end('concord export')
    return { source, exported, entries }
  } catch (error) {
    if (error instanceof ConcordError) throw error
    throw new DecodeError(`concord export: ${(error as Error).message}`, { cause: error })
  }
}

/** Encodes a dump as JSON Lines (one header line, one line per name). */
export function encodeJsonlDump(dump: Dump): string {
  const lines = [
    JSON.stringify({
      format: JSONL_FORMAT,
      version: DUMP_VERSION,
      source: dump.source,
      exported: new Date(dump.exported).toISOString(),
      names: dump.entries.length,
    }),
  ]
  for (const entry of dump.entries) {
    lines.push(JSON.stringify({ name: entry.name, type: entry.type, value: entry.value ?? null, state: Buffer.from(entry.state).toString('base64') }))
  }
  return `${lines.join('\n')}\n`
}

/** Decodes JSON Lines; `CONCORD_DECODE_ERROR` naming the line on anything malformed. */
export function decodeJsonlDump(text: string): Dump {
  const lines = text.split('\n').map((line) => line.trim())
  const fail = (line: number, why: string): never => {
    throw new DecodeError(`concord export, line ${line}: ${why}`)
  }
  const parse = (line: number): Record<string, unknown> => {
    // The value of a line is informative JSON; a line nested past any value a replica makes is refused before it is parsed.
    if (nestingExceeds(lines[line - 1], MAX_LINE_NESTING)) return fail(line, `nested deeper than ${MAX_LINE_NESTING}`)
    let value: unknown
    try {
      value = JSON.parse(lines[line - 1])
    } catch {
      return fail(line, 'not JSON')
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return fail(line, 'not a JSON object')
    return value as Record<string, unknown>
  }
  while (lines.length > 0 && lines.at(-1) === '') lines.pop()
  if (lines.length === 0) fail(1, 'empty input')
  const header = parse(1)
  if (header.format !== JSONL_FORMAT) fail(1, `not a Concord export (format ${JSON.stringify(header.format)})`)
  if (typeof header.version !== 'number' || header.version > DUMP_VERSION) {
    throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `concord export: format version ${String(header.version)} is newer than this code`)
  }
  const entries: DumpEntry[] = []
  for (let line = 2; line <= lines.length; line++) {
    if (lines[line - 1] === '') continue
    const item = parse(line)
    const { name, type, state } = item
    if (typeof name !== 'string' || name.length === 0) fail(line, 'missing "name"')
    if (typeof type !== 'string' || !isRegisteredType(type)) fail(line, `unknown type ${JSON.stringify(type)}`)
    if (typeof state !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(state)) fail(line, '"state" is not base64')
    entries.push({ name: name as string, type: type as ReplicaType, state: new Uint8Array(Buffer.from(state as string, 'base64')), value: item.value })
  }
  if (typeof header.names === 'number' && header.names !== entries.length) {
    throw new DecodeError(`concord export: the header announces ${header.names} names, the file holds ${entries.length} (truncated?)`)
  }
  const exported = typeof header.exported === 'string' ? Date.parse(header.exported) : 0
  return { source: typeof header.source === 'string' ? header.source : '', exported: Number.isFinite(exported) ? exported : 0, entries }
}

/** Decodes either format, telling them apart by the first byte. */
export function decodeDump(bytes: Uint8Array): { dump: Dump; format: DumpFormat } {
  if (bytes.length > 0 && bytes[0] === DUMP_VERSION) return { dump: decodeBinaryDump(bytes), format: 'binary' }
  return { dump: decodeJsonlDump(new TextDecoder('utf-8', { fatal: false }).decode(bytes)), format: 'jsonl' }
}
