/**
 * Wires a {@link SyncSession} to a transport {@link Connection}: frames in,
 * frames out, close both ways. Type-only use of the transport interface, so
 * sync/ stays free of any transport code.
 */
import type { Connection } from '../transports/transport.ts'
import type { SyncHost } from './host.ts'
import { SyncSession, type SessionOptions } from './session.ts'

/** Creates a session over `connection`, starts the handshake and returns it. */
export function attachSession(connection: Connection, host: SyncHost, options: SessionOptions): SyncSession {
  const session = new SyncSession(host, connection, options)
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
