/**
 * The messages between a demo orchestrator and its agent processes (Node
 * IPC, JSON). Every request carries an id; the agent answers it once.
 */

/** How an agent process is started (its first argument, as JSON). */
export interface AgentConfig {
  /** Agent id (stable across restarts). */
  readonly id: string
  /** Its LevelDB folder. */
  readonly dir: string
  /** Port to listen on (0 = any; a restarted agent gets its old one back). */
  readonly port: number
}

/** What an agent reports once it listens. */
export interface ReadyEvent {
  readonly event: 'ready'
  readonly url: string
  readonly port: number
  /** Milliseconds from process start to ready. */
  readonly startupMs: number
}

/** A digest of an agent's state over the demo names, and a few numbers. */
export interface Digest {
  readonly digest: string
  readonly facts: number
  readonly writes: number
}

/** Bytes an agent exchanged over every session since it started. */
export interface Traffic {
  readonly bytesIn: number
  readonly bytesOut: number
}

/** Requests, by command. */
export interface Requests {
  /** Dial exactly these peers (cut the others: a partition); re-dial `refresh` at once. */
  links: { args: { urls: string[]; refresh?: string[] }; result: { connected: string[] } }
  /** One acknowledged write per id (atomic over facts, writes, log, last); resolves once durable here. */
  write: { args: { ids: string[] }; result: { acked: string[] } }
  /** Adds `count` facts `prefix-i` and as many log paragraphs of about `textBytes` (one atomic unit). */
  seed: { args: { prefix: string; count: number; textBytes: number }; result: { facts: number } }
  /** The digest of the demo names. */
  digest: { args: Record<string, never>; result: Digest }
  /** Every fact, the counter, the log length and the register. */
  state: { args: Record<string, never>; result: { facts: string[]; writes: number; log: number; last: unknown } }
  /** Bytes exchanged since the process started. */
  stats: { args: Record<string, never>; result: Traffic & { peers: string[]; diskBytes: number } }
  /** Waits until `peer.flush({ acks })` resolves. */
  flush: { args: { acks: number; timeoutMs?: number }; result: { ok: true } }
  /** The research loop of the shared-context demo. */
  research: { args: { peers: number; workMs: number }; result: ResearchResult }
  /** Planner: publish the plan of a topic. */
  plan: { args: { topic: string; tasks: string[]; peers: number }; result: { ok: true } }
  /** Planner: once every task is done, write the summary and close the plan. */
  summarize: { args: { timeoutMs: number }; result: { summary: string } }
  /** The shared-context state: plan, claims, done, counter, findings. */
  context: { args: Record<string, never>; result: ContextState }
  /** Closes the peer (flushed) and exits. */
  close: { args: Record<string, never>; result: { ok: true } }
}

/** A command name. */
export type Command = keyof Requests

/** What one research agent did. */
export interface ResearchResult {
  readonly completed: string[]
  readonly withdrawn: string[]
}

/** The state of the shared-context demo as one agent sees it. */
export interface ContextState {
  readonly digest: string
  readonly plan: { topic?: string; tasks?: string[]; status?: string } | null
  readonly claims: string[]
  readonly done: string[]
  readonly tasksDone: number
  readonly findings: string[]
  readonly summary: string
}

/** A request as sent. */
export interface RequestMessage {
  readonly rid: number
  readonly cmd: Command
  readonly args: unknown
}

/** An answer. */
export type ResponseMessage =
  | { readonly rid: number; readonly ok: true; readonly result: unknown }
  | { readonly rid: number; readonly ok: false; readonly error: string }
