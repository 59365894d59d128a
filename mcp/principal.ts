/**
 * Who an MCP connection acts for, and what it may see and change: the one
 * admission of the peer (sync/admission.ts) decides, as for every other
 * door. A name the client may not read is invisible: not listed, not
 * readable, and every tool refuses it in the words of an absent name.
 *
 * Two kinds: the peer's own agent (stdio, `concord mcp --id AGENT`: the
 * process that started the server owns the folder, every name is its
 * own), and a remote client (streamable HTTP on a serving peer, admitted
 * with its token; its changes are logged under its own agent id and it
 * may read and write what the peer's access rules give its id).
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import type { Peer } from '../peer/index.ts'
import { isValidName, type AgentId } from '../sync/index.ts'
import { noSuchName } from './errors.ts'

/** See the module comment. */
export interface Principal {
  /** The agent id its changes are logged under (and its presence is shown with). */
  readonly agent: string
  /** True for the peer's own agent: changes are this peer's own (no agent override). */
  readonly local: boolean
  /** Whether it may read `name` (else the name is invisible to it). */
  mayRead(name: string): boolean
}

/** The peer's own agent: it reads and writes every name. */
export function localPrincipal(peer: Peer): Principal {
  return { agent: peer.agentId, local: true, mayRead: (name) => isValidName(name) }
}

/** A client admitted by the peer's admission as `agent` (credentials already checked). */
export function remotePrincipal(peer: Peer, agent: string): Principal {
  return {
    agent,
    local: false,
    mayRead: (name) => isValidName(name) && peer.admission.takes(name) && peer.admission.mayRead(agent as AgentId, name),
  }
}

/** A name opened for a tool: its replica and type. */
export interface OpenedName {
  readonly name: string
  readonly type: ReplicaType
  readonly replica: Replica
}

/**
 * Opens an existing name to read it: `CONCORD_NOT_FOUND` ("no such name")
 * when it does not exist or the client may not read it.
 */
export async function openToRead(peer: Peer, principal: Principal, name: string): Promise<OpenedName> {
  if (!principal.mayRead(name)) throw noSuchName(name)
  const type = await peer.store.typeOf(name)
  if (type === undefined) throw noSuchName(name)
  return { name, type, replica: await peer.store.open(name, type) }
}

/**
 * Opens `name` to change it as one of `accepts` (creating it as `creates`
 * when absent and `creates` is given): invisible or absent (with nothing to
 * create) is `CONCORD_NOT_FOUND`; another type `CONCORD_TYPE_MISMATCH`
 * (told only to a client that may read it); a client that may only read is
 * refused `CONCORD_FORBIDDEN` by the admission.
 */
export async function openToWrite(
  peer: Peer,
  principal: Principal,
  name: string,
  accepts: readonly ReplicaType[],
  creates: ReplicaType | undefined,
  tool: string,
  checkNew?: (type: ReplicaType) => void,
): Promise<OpenedName> {
  if (!principal.mayRead(name)) throw noSuchName(name)
  const stored = await peer.store.typeOf(name)
  if (stored === undefined && creates === undefined) throw noSuchName(name)
  const type = stored ?? creates!
  if (!accepts.includes(type)) {
    throw new ConcordError(ErrorCodes.TYPE_MISMATCH, `"${name}" is of type ${type}; ${tool} works on ${accepts.join(', ')}`)
  }
  if (!principal.local) {
    const opened = await peer.admission.openName(principal.agent as AgentId, name, type, 'write')
    if ('refused' in opened) {
      if (opened.refused.code === ErrorCodes.NOT_FOUND) throw noSuchName(name)
      throw new ConcordError(opened.refused.code as typeof ErrorCodes.FORBIDDEN, opened.refused.message)
    }
  }
  // A name to create: the change must be possible on an empty one, or nothing is created.
  if (stored === undefined) checkNew?.(type)
  return { name, type, replica: await peer.store.open(name, type) }
}
