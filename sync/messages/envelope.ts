/**
 * The frame's envelope (sync/PROTOCOL.md "Frame"): the frame format byte
 * every frame starts with, the protocol versions this code speaks and the
 * message type bytes. Constants only.
 */

/** First byte of every frame: the envelope format. Frozen forever; changes go through the protocol version. */
export const FRAME_FORMAT = 1
/** The highest sync protocol version this code speaks (2: challenge-response credentials, AUTH). */
export const PROTOCOL_VERSION = 2
/** Oldest protocol version this code accepts. */
export const MIN_PROTOCOL_VERSION = 1

/** Message type bytes. Never reuse a retired number. */
export const MessageType = {
  hello: 1,
  helloOk: 2,
  refuse: 3,
  versions: 4,
  delta: 5,
  transaction: 6,
  ack: 7,
  chunk: 8,
  done: 9,
  request: 10,
  reject: 11,
  auth: 12,
  presence: 13,
  provenance: 14,
  ranges: 15,
  want: 16,
  /** A TRANSACTION whose names never shared a unit on the sender (sent only to a peer announcing `independent`). */
  independent: 17,
} as const
