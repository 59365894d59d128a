/**
 * Wires a {@link SyncSession} to a transport connection: frames in, frames
 * out, close both ways. sync/ may not import transports/, so the connection
 * is described structurally ({@link SyncConnection}); every transport's
 * `Connection` fits it.
 */
import type { Emitter } from '../crdt/emitter.ts'
import type { SyncHost } from './host.ts'
import { SyncSession, type SessionOptions, type SyncChannel } from './session.ts'

/** What a session needs of a transport connection (a `Connection` from transports/transport.ts fits). */
export interface SyncConnection extends SyncChannel {
  readonly open: boolean
  /** Which end this is: the dialer (`outbound`) proves its credentials first. */
  readonly direction?: 'inbound' | 'outbound'
  readonly events: Emitter<{ message: Uint8Array; close: { readonly reason?: string } }>
}

/** Creates a session over `connection`, starts the handshake and returns it. */
export function attachSession(connection: SyncConnection, host: SyncHost, options: SessionOptions): SyncSession {
  const session = new SyncSession(host, connection, { ...options, direction: options.direction ?? connection.direction })
  const offMessage = connection.events.on('message', (frame) => session.receive(frame))
  const offClose = connection.events.on('close', ({ reason }) => {
    offMessage()
    offClose()
    session.channelClosed(reason)
  })
  session.events.once('close', () => {
    offMessage()
    offClose()
  })
  if (!connection.open) {
    session.channelClosed('connection already closed')
    return session
  }
  session.start()
  return session
}
