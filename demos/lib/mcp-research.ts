/**
 * The scripted research agent of the MCP demo: deterministic, no model. It
 * does what the `coordinate_task` prompt teaches a model, with the MCP
 * tools only: look at the claims, claim a task in the OR-set, say so in
 * presence, give concurrent claims a moment to arrive and yield to an
 * agent whose id sorts first, "research", check again, then append the
 * finding to the shared Yjs text (with the version it read, so a
 * concurrent append merges) and count the task, every write with a
 * message saying why.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { createHash } from 'node:crypto'
import { findingFor } from './research.ts'

/** The names the agents share. */
export const MCP_NAMES = { claims: 'claims', done: 'done', counter: 'tasks-done', notes: 'notes' } as const

/** What a tool answered. */
export interface ToolAnswer {
  readonly isError: boolean
  readonly body: Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Calls a tool. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args })
  return { isError: result.isError === true, body: (result.structuredContent ?? {}) as Record<string, unknown> }
}

/** Calls a tool that must succeed. */
export async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  const answer = await callTool(client, name, args)
  if (answer.isError) throw new Error(`${name}: ${JSON.stringify(answer.body.error)}`)
  return answer.body
}

/** A set's elements, or none when it does not exist yet. */
async function setValue(client: Client, name: string): Promise<string[]> {
  const answer = await callTool(client, 'read', { name })
  if (answer.isError) {
    if (answer.body.error?.code === 'CONCORD_NOT_FOUND') return []
    throw new Error(`read ${name}: ${JSON.stringify(answer.body.error)}`)
  }
  return answer.body.value as string[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function claimants(claims: readonly string[], task: string): string[] {
  return claims
    .filter((claim) => claim.startsWith(`${task}@`))
    .map((claim) => claim.slice(task.length + 1))
    .sort()
}

/** Deterministic "work time" of an agent on a task (ms). */
function workTime(agent: string, task: string, base: number): number {
  return base + (createHash('sha256').update(`${agent}/${task}`).digest()[0] % Math.max(1, base))
}

/** What an agent did. */
export interface McpResearchResult {
  readonly completed: string[]
  readonly yielded: string[]
}

/** The research loop of agent `me` over `tasks` (see the module comment). */
export async function researchThroughMcp(
  client: Client,
  me: string,
  tasks: readonly string[],
  options: { workMs: number; settleMs: number },
): Promise<McpResearchResult> {
  const completed: string[] = []
  const yielded: string[] = []
  const offset = [...me].reduce((sum, ch) => sum + ch.charCodeAt(0), 0) % tasks.length
  const order = tasks.map((_, i) => tasks[(i + offset) % tasks.length])
  const deadline = Date.now() + 90_000
  const yieldTask = async (task: string, to: string | undefined) => {
    await tool(client, 'set_remove', {
      name: MCP_NAMES.claims,
      elements: [`${task}@${me}`],
      message: `yielding ${task} to ${to ?? 'the agent that finished it'}`,
    })
    yielded.push(task)
  }
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${me}: the research did not finish`)
    const [claims, done] = await Promise.all([setValue(client, MCP_NAMES.claims), setValue(client, MCP_NAMES.done)])
    const open = order.filter((task) => !done.includes(task) && claimants(claims, task).every((agent) => agent === me))
    if (open.length === 0) {
      if (tasks.every((task) => done.includes(task))) break
      await sleep(40) // claimed by others, still in progress
      continue
    }
    const task = open[0]
    await tool(client, 'set_add', { name: MCP_NAMES.claims, elements: [`${task}@${me}`], message: `${me} takes ${task}: nobody had claimed it` })
    await tool(client, 'presence', { action: 'set', status: `claimed ${task}`, name: MCP_NAMES.claims, ttlSeconds: 30 })
    await sleep(options.settleMs) // concurrent claims arrive
    let winner = claimants(await setValue(client, MCP_NAMES.claims), task)[0]
    if (winner !== me) {
      await yieldTask(task, winner)
      continue
    }
    await tool(client, 'presence', { action: 'set', status: `researching ${task}`, name: MCP_NAMES.notes, ttlSeconds: 30 })
    await sleep(workTime(me, task, options.workMs))
    winner = claimants(await setValue(client, MCP_NAMES.claims), task)[0]
    if ((await setValue(client, MCP_NAMES.done)).includes(task) || winner !== me) {
      await yieldTask(task, winner)
      continue
    }
    const notes = await tool(client, 'read', { name: MCP_NAMES.notes })
    await tool(client, 'text_insert', {
      name: MCP_NAMES.notes,
      index: notes.total,
      text: `${findingFor(task, me)}\n`,
      ifVersion: notes.version,
      message: `${me}'s finding on ${task}`,
    })
    await tool(client, 'set_add', { name: MCP_NAMES.done, elements: [task], message: `${task} is researched` })
    await tool(client, 'counter_add', { name: MCP_NAMES.counter, amount: 1, message: `${me} finished ${task}` })
    completed.push(task)
  }
  await tool(client, 'presence', { action: 'clear' })
  return { completed, yielded }
}
