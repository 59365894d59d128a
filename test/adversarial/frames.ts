/**
 * Frames for the attacks, built with the project's encoders: well-formed
 * messages through `encodeMessage` (sync/messages.ts), and frames whose
 * counts and lengths lie, written field by field with the codec's
 * `Encoder` (crdt/codec.ts) following the grammar in sync/PROTOCOL.md.
 */
import { Encoder } from '../../crdt/codec.ts'
import { FRAME_FORMAT, MessageType, encodeMessage } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'

/** The largest varUint of the grammar (2^53-1). */
export const HUGE = Number.MAX_SAFE_INTEGER

/** A CHUNK frame (`id`, `index` of `count`, `totalBytes` announced, a small part). */
export function chunkFrame(id: number, index: number, count: number, totalBytes: number, part = new Uint8Array(16)): Uint8Array {
  return encodeMessage({ type: 'chunk', id, index, count, totalBytes, bytes: part })
}

/** A HELLO of this code's protocol version. */
export function helloFrame(id: string, token: string, extra: { maxFrameBytes?: number; window?: number } = {}): Uint8Array {
  return encodeMessage({
    type: 'hello',
    minVersion: 1,
    maxVersion: 1,
    agentId: agentId(id),
    token,
    filter: {},
    maxFrameBytes: extra.maxFrameBytes ?? 1 << 20,
    window: extra.window ?? 256,
    extensions: [],
  })
}

/** A frame header (format, type) followed by whatever `write` puts after it. */
function frame(type: number, write: (encoder: Encoder) => void): Uint8Array {
  const encoder = new Encoder(64).writeUint8(FRAME_FORMAT).writeUint8(type)
  write(encoder)
  return encoder.finish()
}

const zeros = (n: number) => new Uint8Array(n)

/**
 * For every message type of the grammar, frames whose counts or lengths
 * claim far more than they carry, or carry more than the limits allow:
 * each must be dropped before anything of the claimed size is allocated.
 */
export function oversizedFrames(): Array<{ readonly label: string; readonly frame: Uint8Array }> {
  const bigName = 'n'.repeat(1024)
  return [
    // 1 HELLO
    {
      label: 'hello: maxVersion 2^53-1',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(HUGE)
          .writeString('x')
          .writeString('')
          .writeUint8(0)
          .writeVarUint(1 << 20)
          .writeVarUint(256)
          .writeVarUint(0),
      ),
    },
    {
      label: 'hello: agent id length 2^40',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(1)
          .writeVarUint(2 ** 40),
      ),
    },
    {
      label: 'hello: token length 2^32 (absent)',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(1)
          .writeString('intruder')
          .writeVarUint(2 ** 32),
      ),
    },
    {
      label: 'hello: 64 KiB token',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(1)
          .writeString('intruder')
          .writeString('t'.repeat(65536))
          .writeUint8(0)
          .writeVarUint(1 << 20)
          .writeVarUint(256)
          .writeVarUint(0),
      ),
    },
    {
      label: 'hello: filter of 2^53-1 names',
      frame: frame(MessageType.hello, (e) => e.writeVarUint(1).writeVarUint(1).writeString('intruder').writeString('').writeUint8(1).writeVarUint(HUGE)),
    },
    {
      label: 'hello: filter of 4096 names of 1024 chars (4 MiB)',
      frame: frame(MessageType.hello, (e) => {
        e.writeVarUint(1).writeVarUint(1).writeString('intruder').writeString('').writeUint8(1).writeVarUint(4096)
        for (let i = 0; i < 4096; i++) e.writeString(bigName)
        e.writeVarUint(0)
          .writeVarUint(1 << 20)
          .writeVarUint(256)
          .writeVarUint(0)
      }),
    },
    {
      label: 'hello: 2^53-1 prefixes',
      frame: frame(MessageType.hello, (e) =>
        e.writeVarUint(1).writeVarUint(1).writeString('intruder').writeString('').writeUint8(1).writeVarUint(0).writeVarUint(HUGE),
      ),
    },
    {
      label: 'hello: 2^53-1 extensions',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(1)
          .writeString('intruder')
          .writeString('')
          .writeUint8(0)
          .writeVarUint(1 << 20)
          .writeVarUint(256)
          .writeVarUint(HUGE),
      ),
    },
    {
      label: 'hello: extension value length 2^50',
      frame: frame(MessageType.hello, (e) =>
        e
          .writeVarUint(1)
          .writeVarUint(1)
          .writeString('intruder')
          .writeString('')
          .writeUint8(0)
          .writeVarUint(1 << 20)
          .writeVarUint(256)
          .writeVarUint(1)
          .writeString('k')
          .writeVarUint(2 ** 50),
      ),
    },
    { label: 'hello: maxFrameBytes 2^53-1, window 2^53-1, no credentials', frame: helloFrame('intruder', '', { maxFrameBytes: HUGE, window: HUGE }) },
    { label: 'hello: maxFrameBytes 1, no credentials', frame: helloFrame('intruder', '', { maxFrameBytes: 1 }) },
    // 2 HELLO-OK, 3 REFUSE
    { label: 'hello-ok: version 2^53-1', frame: frame(MessageType.helloOk, (e) => e.writeVarUint(HUGE)) },
    { label: 'refuse: message length 2^40', frame: frame(MessageType.refuse, (e) => e.writeUint8(255).writeVarUint(2 ** 40)) },
    // 4 VERSIONS
    { label: 'versions: 2^53-1 entries', frame: frame(MessageType.versions, (e) => e.writeVarUint(HUGE)) },
    { label: 'versions: name length 2^30', frame: frame(MessageType.versions, (e) => e.writeVarUint(1).writeVarUint(2 ** 30)) },
    {
      label: 'versions: version length 2^40',
      frame: frame(MessageType.versions, (e) =>
        e
          .writeVarUint(1)
          .writeString('seed/0001')
          .writeString('pncounter')
          .writeVarUint(2 ** 40),
      ),
    },
    // 5 DELTA, 6 TRANSACTION
    {
      label: 'delta: seq 2^53-1, delta length 2^50',
      frame: frame(MessageType.delta, (e) =>
        e
          .writeVarUint(HUGE)
          .writeString('evil/delta')
          .writeString('gcounter')
          .writeVarUint(2 ** 50),
      ),
    },
    {
      label: 'delta: name of 1 MiB',
      frame: frame(MessageType.delta, (e) =>
        e
          .writeVarUint(1)
          .writeString('n'.repeat(1 << 20))
          .writeString('gcounter')
          .writeBytes(zeros(4)),
      ),
    },
    { label: 'transaction: 2^53-1 entries', frame: frame(MessageType.transaction, (e) => e.writeVarUint(1).writeVarUint(HUGE)) },
    {
      label: 'transaction: 60,000 entries of bad deltas',
      frame: frame(MessageType.transaction, (e) => {
        e.writeVarUint(2).writeVarUint(60_000)
        for (let i = 0; i < 60_000; i++) e.writeString(`evil/t${i}`).writeString('gcounter').writeBytes(zeros(2))
      }),
    },
    // 7 ACK, 8 CHUNK, 9 DONE, 10 REQUEST, 11 REJECT
    { label: 'ack: seq 2^53-1', frame: frame(MessageType.ack, (e) => e.writeVarUint(HUGE)) },
    {
      label: 'chunk: count 2^53-1',
      frame: frame(MessageType.chunk, (e) => e.writeVarUint(1).writeVarUint(0).writeVarUint(HUGE).writeVarUint(HUGE).writeBytes(zeros(8))),
    },
    { label: 'chunk: count 2^25, 32 MiB announced', frame: chunkFrame(2, 0, 2 ** 25, 2 ** 25) },
    { label: 'chunk: id and index 2^53-2', frame: chunkFrame(HUGE, HUGE - 1, HUGE, HUGE) },
    {
      label: 'chunk: part length 2^40',
      frame: frame(MessageType.chunk, (e) =>
        e
          .writeVarUint(3)
          .writeVarUint(0)
          .writeVarUint(2)
          .writeVarUint(2 ** 26)
          .writeVarUint(2 ** 40),
      ),
    },
    { label: 'done: seq 2^53-1', frame: frame(MessageType.done, (e) => e.writeVarUint(HUGE)) },
    { label: 'request: 512 KiB trailing', frame: frame(MessageType.request, (e) => e.writeRaw(zeros(512 * 1024))) },
    {
      label: 'reject: code length 2^40',
      frame: frame(MessageType.reject, (e) =>
        e
          .writeVarUint(1)
          .writeString('seed/0001')
          .writeVarUint(2 ** 40),
      ),
    },
    {
      label: 'reject: seq 2^53-1, message length 2^50',
      frame: frame(MessageType.reject, (e) =>
        e
          .writeVarUint(HUGE)
          .writeString('seed/0001')
          .writeString('CONCORD_FORBIDDEN')
          .writeVarUint(2 ** 50),
      ),
    },
    // unknown types and envelopes
    { label: 'unknown type 200, 512 KiB payload', frame: frame(200, (e) => e.writeRaw(zeros(512 * 1024))) },
    { label: 'frame format 2', frame: new Uint8Array([2, MessageType.hello, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]) },
    { label: 'empty frame', frame: new Uint8Array(0) },
    {
      label: 'frame of 2 MiB (over the frame limit)',
      frame: frame(MessageType.delta, (e) =>
        e
          .writeVarUint(1)
          .writeString('evil/big')
          .writeString('gcounter')
          .writeBytes(zeros(2 << 20)),
      ),
    },
  ]
}
