/**
 * The decoders the fuzzer runs: every decoder of bytes that come from the
 * wire (sync frames, chunk streams, gossip messages, libp2p framing, replica
 * deltas and versions of every type, Yjs updates and state vectors, a stock
 * y-websocket client's messages and awareness updates,
 * Automerge chunks and versions, document snapshots) or from storage (log
 * records, checkpoints, name metadata, archive markers and bodies, the
 * seal file, seal key and losses, segment indexes, store info, storage keys,
 * exports in both formats, canonical JSON, seq keys). Each target gives valid
 * encodings to mutate (`seeds`), the decode to run, and the error codes its
 * contract allows: anything else it throws is a finding.
 */
import * as A from '@automerge/automerge'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as Y from 'yjs'
import { Decoder, Encoder, decodeGuarded } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { AutomergeReplica, YjsReplica } from '../../crdt/documents/index.ts'
import { splitAutomergeChunks } from '../../crdt/documents/automerge-guard.ts'
import { decodeAutomergeVersion } from '../../crdt/documents/automerge-replica.ts'
import { DEFAULT_DOCUMENT_LIMITS } from '../../crdt/documents/options.ts'
import { decodeDocumentSnapshot } from '../../crdt/documents/snapshot-envelope.ts'
import { validateYjsStateVector, validateYjsUpdate } from '../../crdt/documents/yjs-guard.ts'
import { parseCanonicalJson } from '../../crdt/types/json.ts'
import { decodeState, decodeVersion } from '../../crdt/types/state-codec.ts'
import { NATIVE_TYPES, type NativeType } from '../../crdt/catalog.ts'
import { decodeBinaryDump, decodeJsonlDump, encodeBinaryDump, encodeJsonlDump } from '../../cli/dump-format.ts'
import { decodeGossipMessage, encodeGossipMessage } from '../../peer/gossip-codec.ts'
import { RoomAwareness } from '../../peer/y-websocket-awareness.ts'
import { readClientMessage } from '../../peer/y-websocket-bridge.ts'
import { decodeArchive, decodeArchiveMarker, encodeArchive, encodeArchiveMarker } from '../../persistence/format/archive.ts'
import { decodeCheckpoint, encodeCheckpoint } from '../../persistence/format/checkpoint.ts'
import { logKey, metaKey, parseSeqKey, seqKey } from '../../persistence/format/keys.ts'
import { decodeMeta, encodeLegacyMeta, encodeMeta, META_VERSION, newMeta } from '../../persistence/format/name-meta.ts'
import { decodeRecord, encodeLegacyRecord, encodeRecord, RECORD_VERSION } from '../../persistence/format/record.ts'
import {
  decodeLosses,
  decodeSealFile,
  decodeSealKey,
  encodeLosses,
  encodeSealFile,
  encodeSealFileV1,
  encodeSealKey,
  packChunks,
  SEAL_CHUNK_NAMES,
  sealEntries,
} from '../../persistence/format/seal.ts'
import { decodeSegmentIndex, encodeSegmentIndex } from '../../persistence/format/segments.ts'
import { decodeStoreInfo, encodeStoreInfo } from '../../persistence/format/store-info.ts'
import { decodeKey, encodeKey } from '../../persistence/storage/level/key-codec.ts'
import { appendCrc32, putCrc32 } from '../../crdt/types/crc32.ts'
import { Reassembler, splitIntoChunks } from '../../sync/chunking.ts'
import { NONCE_EXTENSION } from '../../sync/credentials.ts'
import { windowBytesExtension } from '../../sync/extensions.ts'
import { readFrame } from '../../sync/inbound.ts'
import { MessageType, decodeMessage, encodeMessage, type DeltaEntry, type Message } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { DEFAULT_MAX_MALFORMED, newSessionStats } from '../../sync/session-types.ts'
import { FrameDecoder, encodeFrame } from '../../transports/libp2p/frame-codec.ts'
import type { Prng } from '../../transports/memory/prng.ts'
import { HUGE_VALUES, type Mutable } from './mutate.ts'
import { makeReplica, mutate } from '../sync/helpers/memory-host.ts'

/** One decoder under fuzzing. */
export interface FuzzTarget extends Mutable {
  readonly name: string
  /** Valid encodings, to mutate (made once, from the seed). */
  seeds(random: Prng): Uint8Array[]
  /** Decodes one input; throws what the decoder throws. */
  decode(bytes: Uint8Array): void
  /** The ConcordError codes the decoder may throw on bad input. */
  readonly codes: readonly string[]
}

const DECODE = [ErrorCodes.DECODE_ERROR]
const STORED = [ErrorCodes.CORRUPT_RECORD, ErrorCodes.UNSUPPORTED_VERSION]
const utf8 = new TextEncoder()
const text = new TextDecoder('utf-8', { fatal: false })

/**
 * Reseals a body whose checksum covers `covered` before it (not stored: a
 * version 4 record's place, a version 4 metadata's name), when it starts
 * with `version`; a body of an older version, whose checksum covers itself
 * alone, as such.
 */
function coveringSeal(covered: Uint8Array, version: number): (body: Uint8Array) => Uint8Array {
  return (body) => {
    if (body[0] !== version) return appendCrc32(body)
    const framed = new Uint8Array(covered.length + body.length + 4)
    framed.set(covered)
    framed.set(body, covered.length)
    putCrc32(framed, framed.length - 4, framed.subarray(0, framed.length - 4))
    return framed.slice(covered.length)
  }
}

/** `string name | varuint seq` of a short name and a small seq (a version 4 record's covered place). */
const place = (name: string, seq?: number) => new Uint8Array([name.length, ...utf8.encode(name), ...(seq === undefined ? [] : [seq])])

/** Whether `error` is within what `target` may throw. */
export function allowed(target: FuzzTarget, error: unknown): boolean {
  return isConcordError(error) && target.codes.includes(error.code)
}

/** A native replica with a few random changes, as a state and a version. */
function nativeSamples(type: NativeType, random: Prng): { states: Uint8Array[]; versions: Uint8Array[] } {
  const a = makeReplica(type, 'fuzz-a')
  const b = makeReplica(type, 'fuzz-b')
  const states: Uint8Array[] = []
  const versions: Uint8Array[] = []
  for (let i = 0; i < 6; i++) {
    mutate(a, random, `a${i}`)
    mutate(b, random, `b${i}`)
    if (i % 2 === 0) b.applyDelta(a.snapshot())
    states.push(a.snapshot())
    versions.push(a.version())
    const delta = a.deltaSince(b.version())
    if (delta) states.push(delta)
  }
  return { states, versions }
}

/** Every message type, with random contents. */
function messages(random: Prng): Message[] {
  const bytes = (n: number) => new Uint8Array(n).map(() => random.int(0, 255))
  const name = () => `n/${random.int(0, 999)}`
  const entry = (): DeltaEntry => ({
    name: name(),
    replicaType: random.pick(['gcounter', 'yjs', 'automerge', 'orset'] as const),
    delta: bytes(random.int(0, 40)),
  })
  return [
    {
      type: 'hello',
      minVersion: 1,
      maxVersion: 2,
      agentId: agentId(`peer-${random.int(0, 99)}`),
      token: random.chance(0.3) ? 'tok' : '',
      filter: random.chance(0.5) ? {} : { names: [name(), name()], prefixes: ['p/'] },
      maxFrameBytes: 1 << 20,
      window: 256,
      extensions: [{ key: NONCE_EXTENSION, value: bytes(32) }, windowBytesExtension(16 << 20)],
    },
    { type: 'hello-ok', version: 2 },
    { type: 'auth', proof: bytes(32) },
    { type: 'refuse', reason: 'auth', message: 'no', minVersion: 1, maxVersion: 2 },
    {
      type: 'versions',
      entries: Array.from({ length: random.int(0, 12) }, () => ({ name: name(), replicaType: 'gset' as const, version: bytes(random.int(0, 30)) })),
    },
    { type: 'delta', seq: random.int(1, 1e6), entry: entry() },
    { type: 'transaction', seq: random.int(1, 1e6), entries: Array.from({ length: random.int(1, 6) }, entry) },
    { type: 'ack', seq: random.int(0, 1e9) },
    { type: 'chunk', id: random.int(0, 9), index: 0, count: 3, totalBytes: 600, bytes: bytes(200) },
    { type: 'done', seq: random.int(0, 1e9) },
    { type: 'request' },
    { type: 'reject', seq: 1, name: name(), code: ErrorCodes.FORBIDDEN, message: 'read only' },
  ]
}

/** Frames with a 2-byte length prefix each, as one input (the chunk-stream target splits them again). */
function framed(frames: readonly Uint8Array[]): Uint8Array {
  const encoder = new Encoder(256)
  for (const frame of frames)
    encoder
      .writeUint8(frame.length >> 8)
      .writeUint8(frame.length & 0xff)
      .writeRaw(frame)
  return encoder.finish()
}

function* unframed(bytes: Uint8Array): Generator<Uint8Array> {
  let at = 0
  while (at + 2 <= bytes.length) {
    const length = (bytes[at] << 8) | bytes[at + 1]
    at += 2
    yield bytes.subarray(at, Math.min(bytes.length, at + length))
    at += length
  }
}

function yjsUpdates(random: Prng): { updates: Uint8Array[]; vectors: Uint8Array[] } {
  const doc = new Y.Doc()
  doc.clientID = random.int(1, 1e6)
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  for (let i = 0; i < 8; i++) {
    const t = doc.getText('t')
    if (t.length > 2 && random.chance(0.3)) t.delete(random.int(0, t.length - 2), 1)
    else t.insert(random.int(0, t.length), `w${i} `)
    doc.getMap('m').set(`k${random.int(0, 3)}`, { nested: [i, { deep: `v${i}` }] })
    doc.getArray('a').push([i, 'x'])
  }
  return { updates: [...updates, Y.encodeStateAsUpdate(doc)], vectors: [Y.encodeStateVector(doc), Y.encodeStateVector(new Y.Doc())] }
}

function automergeSamples(random: Prng): Uint8Array[] {
  let doc = A.from<Record<string, unknown>>({ items: [] })
  for (let i = 0; i < 5; i++) {
    doc = A.change(doc, (d) => {
      ;(d.items as unknown[]).push(`item-${random.int(0, 99)}`)
      d[`k${i}`] = { n: i }
    })
  }
  return [A.save(doc), ...A.getAllChanges(doc), A.saveIncremental(doc)]
}

const huge = (random: Prng): number => random.pick(HUGE_VALUES)

/**
 * A nesting depth for deep JSON: mostly 64K-1M levels, a quarter 2.5M-3M
 * (JSON.parse of 2.5M levels runs a 128 MiB heap out of memory). Kept rare:
 * each is a string of megabytes, and collecting them adds GC pauses to the
 * inputs timed after them.
 */
const deepNesting = (random: Prng): number => (random.chance(0.25) ? random.int(2560, 3072) : random.int(64, 1024)) * 1024
const frame = (type: number): Encoder => new Encoder(64).writeUint8(1).writeUint8(type)

/**
 * Sync frames with a huge count or length in one of their fields, the rest
 * well formed: CHUNKs announcing millions of parts (the attack that killed a
 * server), VERSIONS and TRANSACTIONs claiming millions of entries, HELLOs
 * with huge filters and extensions, strings claiming gigabytes.
 */
function adversarialMessage(random: Prng): Uint8Array {
  const n = huge(random)
  switch (random.int(0, 7)) {
    case 0: {
      const count = random.chance(0.5) ? n : random.int(1, 33 * 1024 * 1024)
      return frame(MessageType.chunk)
        .writeVarUint(random.int(0, 3))
        .writeVarUint(0)
        .writeVarUint(count)
        .writeVarUint(Math.max(count, n))
        .writeBytes(new Uint8Array(random.int(0, 8)))
        .finish()
    }
    case 1:
      return frame(MessageType.versions).writeVarUint(n).writeString('a').writeString('gset').writeBytes(new Uint8Array(1)).finish()
    case 2:
      return frame(MessageType.transaction).writeVarUint(1).writeVarUint(n).writeString('a').writeString('yjs').writeBytes(new Uint8Array(2)).finish()
    case 3:
      return frame(MessageType.hello).writeVarUint(1).writeVarUint(2).writeString('p').writeString('').writeUint8(1).writeVarUint(n).finish()
    case 4:
      return frame(MessageType.hello)
        .writeVarUint(1)
        .writeVarUint(2)
        .writeString('p')
        .writeString('')
        .writeUint8(0)
        .writeVarUint(1 << 20)
        .writeVarUint(8)
        .writeVarUint(n)
        .finish()
    case 5:
      return frame(MessageType.delta)
        .writeVarUint(1)
        .writeVarUint(n)
        .writeRaw(new Uint8Array(random.int(0, 64)))
        .finish()
    case 6:
      return frame(MessageType.reject).writeVarUint(1).writeString('a').writeVarUint(n).finish()
    default:
      return frame(MessageType.hello).writeVarUint(1).writeVarUint(2).writeVarUint(n).finish()
  }
}

/** A chunk stream of partial messages announcing huge counts and sizes, over several ids. */
function adversarialChunks(random: Prng): Uint8Array {
  const frames: Uint8Array[] = []
  for (let i = random.int(1, 24); i > 0; i--) {
    const count = random.pick([32 * 1024 * 1024, 16 * 1024 * 1024, 4 * 1024 * 1024, random.int(2, 1 << 20)])
    frames.push(
      encodeMessage({
        type: 'chunk',
        id: random.int(0, 7),
        index: random.int(0, count - 1),
        count,
        totalBytes: count + random.int(0, 1000),
        bytes: new Uint8Array(random.int(0, 300)),
      }),
    )
  }
  return framed(frames)
}

/** A native ormap state whose maps nest `depth` deep (the codec stops at 32), CRC added by the caller. */
function deepOrmap(random: Prng): Uint8Array {
  const depth = random.int(30, 200)
  const encoder = new Encoder(64).writeUint8(1).writeUint8(7) // format, ormap
  encoder.writeVarUint(1).writeString('a').writeVarUint(1).writeVarUint(0).writeVarUint(0) // context {a: 1..1}
  for (let i = 0; i < depth; i++) encoder.writeVarUint(1).writeString('ormap/x')
  encoder.writeVarUint(1).writeString('ewflag/f').writeVarUint(1).writeVarUint(0).writeVarUint(1) // a flag with the dot a:1
  return encoder.finish()
}

/** A native state with a huge count in its context or store, CRC added by the caller. */
function hugeNative(random: Prng): Uint8Array {
  const type = random.int(1, 8)
  const encoder = new Encoder(64).writeUint8(1).writeUint8(type)
  if (random.chance(0.5)) return encoder.writeVarUint(huge(random)).writeString('a').finish()
  encoder
    .writeVarUint(1)
    .writeString('a')
    .writeVarUint(random.chance(0.5) ? huge(random) : 1)
    .writeVarUint(random.chance(0.5) ? huge(random) : 0)
    .writeVarUint(huge(random))
  return encoder.writeVarUint(huge(random)).writeVarUint(0).writeVarUint(1).finish()
}

const natives: FuzzTarget[] = NATIVE_TYPES.flatMap((type) => [
  {
    name: `native state ${type}`,
    seeds: (random) => nativeSamples(type, random).states,
    decode: (bytes) => {
      decodeState(bytes, type)
    },
    codes: DECODE,
    sealed: true,
    adversarial: type === 'ormap' ? (random) => (random.chance(0.5) ? deepOrmap(random) : hugeNative(random)) : hugeNative,
  },
  {
    name: `native version ${type}`,
    seeds: (random) => nativeSamples(type, random).versions,
    decode: (bytes) => {
      decodeVersion(bytes, type)
    },
    codes: DECODE,
    sealed: true,
    adversarial: hugeNative,
  },
])

/** Every target. */
export const TARGETS: readonly FuzzTarget[] = [
  {
    name: 'sync message',
    seeds: (random) => messages(random).map(encodeMessage),
    decode: (bytes) => {
      decodeMessage(bytes)
    },
    codes: DECODE,
    adversarial: adversarialMessage,
  },
  {
    name: 'sync chunk stream',
    seeds: (random) =>
      messages(random)
        .filter((m) => m.type === 'transaction' || m.type === 'versions')
        .map((m) => framed(splitIntoChunks(encodeMessage(m), 256, random.int(0, 5)))),
    decode: (bytes) => {
      const reassembler = new Reassembler()
      const stats = newSessionStats()
      // As a session does: the peer is refused once it sent more malformed frames than the session tolerates
      // (without the cut, an input of zeros is tens of thousands of empty frames, each a thrown DecodeError).
      let malformed = 0
      for (const frame of unframed(bytes)) {
        try {
          readFrame(frame, reassembler, stats)
        } catch (error) {
          if (!isConcordError(error, ErrorCodes.DECODE_ERROR)) throw error
          if (++malformed > DEFAULT_MAX_MALFORMED) return
        }
      }
    },
    codes: [ErrorCodes.DECODE_ERROR, ErrorCodes.LIMIT_EXCEEDED, ErrorCodes.PROTOCOL_ERROR],
    adversarial: adversarialChunks,
  },
  {
    name: 'gossip message',
    seeds: (random) =>
      [1, 2, 5].map((units) =>
        encodeGossipMessage({
          run: random.int(0, 2 ** 31),
          seq: random.int(1, 1e6),
          agent: `agent-${random.int(0, 9)}`,
          units: Array.from({ length: units }, () => messages(random).flatMap((m) => (m.type === 'transaction' ? m.entries : []))),
        }),
      ),
    decode: (bytes) => {
      decodeGossipMessage(bytes)
    },
    codes: DECODE,
    adversarial: (random) =>
      new Encoder()
        .writeUint8(1)
        .writeVarUint(1)
        .writeVarUint(1)
        .writeString('agent')
        .writeVarUint(random.chance(0.5) ? huge(random) : 1)
        .writeVarUint(huge(random))
        .finish(),
  },
  {
    name: 'libp2p framing',
    seeds: (random) => [
      new Encoder()
        .writeRaw(encodeFrame(new Uint8Array(10), 1 << 20))
        .writeRaw(encodeFrame(messages(random).map(encodeMessage)[4], 1 << 20))
        .finish(),
    ],
    decode: (bytes) => {
      const decoder = new FrameDecoder(1 << 20)
      // As a stream delivers it: in pieces of varying size.
      for (let at = 0, step = 1; at < bytes.length; at += step, step = ((step * 7) % 61) + 1) decoder.push(bytes.subarray(at, at + step))
    },
    codes: DECODE,
    // Many frames announcing (near) the limit, each with a few bytes of body: the old decoder allocated each announced length.
    adversarial: (random) => new Uint8Array([0xff, 0xff, 0x3f, ...new Uint8Array(random.int(0, 100))]),
  },
  {
    name: 'codec primitives',
    seeds: () => [new Encoder().writeVarUint(5).writeString('hello').writeVarUint(3).writeBytes(new Uint8Array(3)).writeVarInt(-7).writeFloat64(1.5).finish()],
    decode: (bytes) => {
      const decoder = new Decoder(bytes)
      decoder.readVarUint()
      decoder.readString(64)
      const count = decoder.readCount(2)
      for (let i = 0; i < count; i++) decoder.readBytes()
      decoder.readVarInt()
      decoder.readFloat64()
      decoder.end('primitives')
    },
    codes: DECODE,
  },
  ...natives,
  {
    name: 'canonical json',
    seeds: () => ['{"a":[1,2,{"b":null}],"c":"d"}', '[[[[[[1]]]]]]', `${'['.repeat(2000)}${']'.repeat(2000)}`].map((t) => utf8.encode(t)),
    decode: (bytes) => {
      parseCanonicalJson(text.decode(bytes))
    },
    codes: DECODE,
    // Balanced nesting millions deep: JSON.parse alone would build every level (out of memory at 8M in 128 MiB).
    adversarial: (random) => {
      const depth = deepNesting(random)
      return utf8.encode(`${'['.repeat(depth)}${']'.repeat(depth)}`)
    },
  },
  {
    name: 'yjs update',
    seeds: (random) => yjsUpdates(random).updates,
    decode: (bytes) => {
      validateYjsUpdate(bytes, DEFAULT_DOCUMENT_LIMITS)
    },
    codes: DECODE,
    // Huge client or struct counts, a huge clock, a huge string length, then a delete set claiming millions of ranges.
    adversarial: (random) =>
      new Encoder()
        .writeVarUint(random.chance(0.5) ? huge(random) : 1)
        .writeVarUint(huge(random))
        .writeVarUint(random.int(0, 99))
        .writeVarUint(huge(random))
        .writeUint8(4)
        .writeVarUint(huge(random))
        .writeVarUint(0)
        .writeVarUint(huge(random))
        .finish(),
  },
  {
    name: 'yjs state vector',
    seeds: (random) => yjsUpdates(random).vectors,
    decode: (bytes) => {
      validateYjsStateVector(bytes, DEFAULT_DOCUMENT_LIMITS)
    },
    codes: DECODE,
    adversarial: (random) => new Encoder().writeVarUint(huge(random)).writeVarUint(1).writeVarUint(huge(random)).finish(),
  },
  {
    name: 'automerge chunks',
    seeds: automergeSamples,
    decode: (bytes) => {
      splitAutomergeChunks(bytes, DEFAULT_DOCUMENT_LIMITS)
    },
    codes: DECODE,
    // A chunk header (magic, checksum, type) announcing a huge length, then a little of it.
    adversarial: (random) =>
      new Encoder()
        .writeRaw(new Uint8Array([0x85, 0x6f, 0x4a, 0x83, 1, 2, 3, 4, random.int(0, 2)]))
        .writeVarUint(huge(random))
        .writeRaw(new Uint8Array(random.int(0, 64)))
        .finish(),
  },
  {
    name: 'automerge version',
    seeds: (random) => {
      const replica = makeReplica('automerge', 'fuzz')
      for (let i = 0; i < 3; i++) mutate(replica, random, `v${i}`)
      return [replica.version(), makeReplica('automerge', 'other').version()]
    },
    decode: (bytes) => {
      decodeAutomergeVersion(bytes)
    },
    codes: DECODE,
  },
  {
    name: 'document snapshot',
    seeds: (random) => {
      const yjs = makeReplica('yjs', 'fuzz') as YjsReplica
      const automerge = makeReplica('automerge', 'fuzz') as AutomergeReplica
      for (let i = 0; i < 3; i++) {
        mutate(yjs, random, `y${i}`)
        mutate(automerge, random, `a${i}`)
      }
      return [yjs.snapshot(), automerge.snapshot()]
    },
    decode: (bytes) => {
      for (const kind of ['yjs', 'automerge'] as const) {
        try {
          decodeDocumentSnapshot(bytes, kind)
        } catch (error) {
          if (!isConcordError(error, ErrorCodes.DECODE_ERROR)) throw error
        }
      }
    },
    codes: DECODE,
  },
  {
    name: 'log record',
    seeds: (random) =>
      [0, 40, 3000, 41].map((size) =>
        (size === 41 ? encodeLegacyRecord : encodeRecord)({
          name: 'n/1',
          seq: 7,
          hlc: { wall: 1_700_000_000_000 + random.int(0, 1e6), logical: random.int(0, 9) },
          agent: 'agent',
          kind: random.chance(0.5) ? 'delta' : 'state',
          prevHash: new Uint8Array(32).fill(7),
          delta: new Uint8Array(size).fill(3),
        }),
      ),
    decode: (bytes) => {
      decodeRecord(bytes, { name: 'n/1', seq: 7, prevHash: new Uint8Array(32) })
    },
    codes: STORED,
    sealed: true,
    reseal: coveringSeal(place('n/1', 7), RECORD_VERSION),
  },
  {
    name: 'checkpoint',
    seeds: (random) => [
      encodeCheckpoint({
        name: 'n',
        type: 'gcounter',
        seq: random.int(1, 1000),
        hash: new Uint8Array(32),
        schema: 0,
        hlc: { wall: 1_700_000_000_000, logical: 0 },
        snapshot: nativeSamples('gcounter', random).states[0],
      }),
    ],
    decode: (bytes) => {
      decodeCheckpoint(bytes)
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'name metadata',
    seeds: (random) => [
      ...[encodeMeta, encodeLegacyMeta].map((encode) =>
        encode({
          ...newMeta('n', 'orset', 1, 1_700_000_000_000, 5000),
          checkpoints: [
            { seq: random.int(1, 99), size: 100 },
            { seq: 120, size: 300 },
          ],
          digest: { seq: 120, bytes: new Uint8Array(16).fill(5) },
        }),
      ),
    ],
    decode: (bytes) => {
      decodeMeta(bytes, 'n')
    },
    codes: STORED,
    sealed: true,
    reseal: coveringSeal(place('n'), META_VERSION),
  },
  {
    name: 'archive marker',
    seeds: () => [
      encodeArchiveMarker({
        name: 'n',
        type: 'yjs',
        file: 'n.archive',
        sha256: new Uint8Array(32).fill(1),
        lastSeq: 10,
        records: 10,
        schema: 0,
        touched: 1_700_000_000_000,
        archived: 1_700_000_000_001,
        fileSize: 1234,
      }),
    ],
    decode: (bytes) => {
      decodeArchiveMarker(bytes)
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'archive body',
    seeds: () => [
      encodeArchive('n', [
        { key: logKey('n', 1), value: new Uint8Array(20).fill(2) },
        { key: metaKey('n'), value: new Uint8Array(40).fill(4) },
      ]),
    ],
    decode: (bytes) => {
      decodeArchive('n', bytes)
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'export binary',
    seeds: (random) => [
      encodeBinaryDump({
        source: 'fuzz',
        exported: 1_700_000_000_000,
        entries: NATIVE_TYPES.slice(0, 4).map((type) => ({ name: `n-${type}`, type, state: nativeSamples(type, random).states[0] })),
      }),
    ],
    decode: (bytes) => {
      decodeBinaryDump(bytes)
    },
    codes: [ErrorCodes.DECODE_ERROR, ErrorCodes.UNSUPPORTED_VERSION],
    sealed: true,
  },
  {
    name: 'export jsonl',
    seeds: (random) => [
      utf8.encode(
        encodeJsonlDump({
          source: 'fuzz',
          exported: 1_700_000_000_000,
          entries: NATIVE_TYPES.slice(0, 3).map((type) => ({ name: `n-${type}`, type, state: nativeSamples(type, random).states[0], value: 1 })),
        }),
      ),
    ],
    decode: (bytes) => {
      decodeJsonlDump(text.decode(bytes))
    },
    codes: [ErrorCodes.DECODE_ERROR, ErrorCodes.UNSUPPORTED_VERSION],
    // A name whose informative value nests a million levels (JSON.parse of the line would build them all).
    adversarial: (random) => {
      const depth = deepNesting(random)
      const header = JSON.stringify({ format: 'concord-export', version: 1, source: 'x', names: 1 })
      return utf8.encode(`${header}\n{"name":"n","type":"gcounter","state":"","value":${'['.repeat(depth)}${']'.repeat(depth)}}\n`)
    },
  },
  {
    name: 'y-websocket client message',
    seeds: (random) => {
      const doc = new Y.Doc()
      doc.getText('t').insert(0, `hello ${random.int(0, 99)}`)
      const message = (...parts: Array<number | Uint8Array>) => {
        const e = new Encoder()
        for (const part of parts) typeof part === 'number' ? e.writeVarUint(part) : e.writeBytes(part)
        return e.finish()
      }
      return [
        message(0, 0, Y.encodeStateVector(doc)),
        message(0, 1, Y.encodeStateAsUpdate(doc)),
        message(0, 2, Y.encodeStateAsUpdate(doc)),
        message(1, utf8.encode('{}')),
        message(3),
        message(2, 0),
      ]
    },
    decode: (bytes) => {
      decodeGuarded('y-websocket message', bytes, readClientMessage)
    },
    codes: DECODE,
  },
  {
    name: 'awareness update',
    seeds: (random) => {
      const doc = new Y.Doc()
      const awareness = new awarenessProtocol.Awareness(doc)
      awareness.setLocalState({ user: { name: `agent-${random.int(0, 99)}`, color: '#ff0000' }, cursor: { index: random.int(0, 999) } })
      const seeds = [awarenessProtocol.encodeAwarenessUpdate(awareness, [doc.clientID])]
      awareness.setLocalState(null)
      seeds.push(awarenessProtocol.encodeAwarenessUpdate(awareness, [doc.clientID]))
      awareness.destroy()
      doc.destroy()
      return seeds
    },
    decode: (bytes) => {
      // What a room does with a client's update: parse, check every state is JSON, apply within bounds.
      const room = new RoomAwareness(
        {},
        () => undefined,
        () => 0,
      )
      try {
        room.apply(bytes, room.join())
      } finally {
        room.destroy()
      }
    },
    codes: DECODE,
  },
  {
    name: 'seal file',
    seeds: (random) => {
      const names = Array.from({ length: random.int(1, 40) }, (_, i) => ({ name: `n/${String(i).padStart(3, '0')}`, lastSeq: random.int(0, 1e6) }))
      const header = { agentId: 'agent', generation: random.int(1, 99), closedAt: 1_700_000_000_000 }
      return [
        encodeSealFile({ ...header, chunks: packChunks(names, random.int(1, SEAL_CHUNK_NAMES)) }),
        encodeSealFile({ ...header, chunks: packChunks(names, 7) }),
        encodeSealFileV1({ ...header, names }),
      ]
    },
    decode: (bytes) => {
      // What an open that finds the seal damaged-or-not reads: the header, then every chunk inflated.
      decodeSealFile(bytes, { names: false })
      sealEntries(decodeSealFile(bytes))
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'seal key and losses',
    seeds: (random) => [
      encodeSealKey({ generation: random.int(0, 1e6), closed: random.chance(0.5) }),
      encodeLosses([
        { name: 'n/1', fromSeq: 1, toSeq: random.int(1, 99), closedAt: 1_700_000_000_000, foundAt: 1_700_000_000_001 },
        { name: 'n/2', fromSeq: 4, toSeq: 9, closedAt: 1_700_000_000_000, foundAt: 1_700_000_000_001 },
      ]),
    ],
    decode: (bytes) => {
      for (const decode of [decodeSealKey, decodeLosses]) {
        try {
          decode(bytes)
        } catch (error) {
          if (!isConcordError(error) || !(STORED as readonly string[]).includes(error.code)) throw error
        }
      }
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'segment index',
    seeds: (random) => [
      encodeSegmentIndex('n', [
        { fromSeq: 1, toSeq: 10, file: 'a.concord-segment.gz', sha256: new Uint8Array(32).fill(1), fileSize: random.int(1, 1e6) },
        { fromSeq: 11, toSeq: 40, file: 'b.concord-segment.gz', sha256: new Uint8Array(32).fill(2), fileSize: random.int(1, 1e6) },
      ]),
    ],
    decode: (bytes) => {
      decodeSegmentIndex('n', bytes)
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'store info',
    seeds: (random) => [encodeStoreInfo({ agentId: `agent-${random.int(0, 99)}`, created: 1_700_000_000_000 }), encodeStoreInfo({ agentId: '', created: 0 })],
    decode: (bytes) => {
      decodeStoreInfo(bytes)
    },
    codes: STORED,
    sealed: true,
  },
  {
    name: 'storage key',
    seeds: () => [encodeKey(['l', 'n/1', seqKey(7)]), encodeKey(['m', 'caf\u00e9 \u{1f600}']), encodeKey(['m', 'a\u0000b\u0001c']), encodeKey(['s', 'info'])],
    decode: (bytes) => {
      const key = decodeKey(bytes)
      // A key that decodes is the one its bytes encode: two byte strings never name one key. (Checked up to
      // 16 KiB: a stored key is a few KiB at most, and the encoder's escaping path is not what is under test.)
      if (bytes.length > 16 * 1024) return
      const again = encodeKey(key)
      if (again.length !== bytes.length || again.some((byte, i) => byte !== bytes[i])) throw new Error('storage key: decodes to a key that encodes otherwise')
    },
    codes: DECODE,
  },
  {
    name: 'seq key',
    seeds: () => [utf8.encode(seqKey(1)), utf8.encode(seqKey(2 ** 40))],
    decode: (bytes) => {
      parseSeqKey(text.decode(bytes))
    },
    codes: [ErrorCodes.DECODE_ERROR, ErrorCodes.CORRUPT_RECORD, ErrorCodes.INVALID_ARGUMENT],
  },
]
