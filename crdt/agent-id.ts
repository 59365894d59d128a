/**
 * The agent id: the one name of the identity that holds a replica, writes
 * records (their `agent`), and claims itself in a sync handshake. The same
 * string all the way down: `PeerOptions.agentId`, the store's and each
 * replica's `agentId`, the dots of the causal core, the HELLO's `agentId`.
 */

/** An agent's stable id. Branded so it is not mixed up with names or other strings. */
export type AgentId = string & { readonly __brand: 'AgentId' }

/** Longest agent id accepted, in UTF-16 code units. */
export const MAX_AGENT_ID_LENGTH = 256

/** Brands a string as an {@link AgentId} after checking it (non-empty, at most 256 characters). */
export function agentId(id: string): AgentId {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_AGENT_ID_LENGTH) {
    throw new RangeError(`agent id must be a non-empty string of at most ${MAX_AGENT_ID_LENGTH} characters`)
  }
  return id as AgentId
}
