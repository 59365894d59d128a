/**
 * Demo: LLM agents coordinating through MCP (scripted and deterministic,
 * no model). Three peers: a hub (`concord serve --mcp`), and two agents
 * that each run `concord mcp` (their own peer and LevelDB folder, synced
 * with the hub over WebSocket) as an MCP server over stdio; the third
 * agent talks MCP over streamable HTTP to the hub. All three use only MCP
 * tools: they claim research tasks in an OR-set, say what they do in
 * presence, append findings to a shared Yjs text and count them; the
 * critic then edits the text by quoting it. The demo prints the history
 * of the text (who, when and why) and a blame of the final document.
 *
 *   npm run demo:mcp [-- --short]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { poll, runDemo, section, type Check } from './lib/demo-runner.ts'
import { MCP_NAMES, researchThroughMcp, tool, type McpResearchResult } from './lib/mcp-research.ts'
import { TASKS, TOPIC } from './lib/research.ts'

/** The `concord` command from the sources (`node --import tsx cli/main.ts`), as `npm run concord` runs it. */
const CLI = ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href, fileURLToPath(new URL('../cli/main.ts', import.meta.url))]
const TOKEN = 'demo-secret-for-mcp-agents-0001'

const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
})

/** Starts `concord serve --mcp` and resolves with its addresses. */
async function startHub(dir: string): Promise<{ child: ChildProcess; url: string; mcp: string }> {
  const child = spawn(process.execPath, [...CLI, 'serve', '--dir', dir, '--id', 'hub', '--port', '0', '--json', '--mcp', '--token', TOKEN], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk) => {
    out += chunk
  })
  child.stderr!.on('data', (chunk) => {
    err += chunk
  })
  const ready = await poll(
    async () => out,
    (text) => text.includes('\n') || child.exitCode !== null,
    30_000,
  )
  if (!ready.ok || child.exitCode !== null) throw new Error(`the hub did not start: ${err}`)
  const info = JSON.parse(out.split('\n')[0])
  return { child, url: info.url, mcp: info.mcp }
}

/** An agent on its own peer: `concord mcp` as an MCP server over stdio, synced with the hub. */
async function stdioAgent(
  id: string,
  dir: string,
  hubUrl: string,
): Promise<{ client: Client; pid: number; exited: Promise<number | null>; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, 'mcp', '--dir', dir, '--id', id, '--connect', hubUrl, '--token', TOKEN],
    stderr: 'pipe',
  })
  let err = ''
  transport.stderr!.on('data', (chunk) => {
    err += chunk
  })
  const client = new Client({ name: `demo-${id}`, version: '1.0.0' })
  await client.connect(transport)
  const child = (transport as unknown as { _process: ChildProcess })._process
  children.add(child)
  const exited = new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))))
  const connected = await poll(
    async () => err,
    (text) => text.includes('connected to'),
    30_000,
  )
  if (!connected.ok) throw new Error(`${id} did not connect: ${err}`)
  return { client, pid: transport.pid!, exited, stderr: () => err }
}

/** An agent that talks MCP over HTTP to the hub (its changes are made, and logged under its id, by the hub). */
async function httpAgent(id: string, mcpUrl: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, 'X-Concord-Peer': id } } })
  const client = new Client({ name: `demo-${id}`, version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

await runDemo('demo-mcp', 'Demo — LLM agents (scripted) coordinate a research task through MCP', async (_cluster, options) => {
  const tasks = TASKS.slice(0, options.short ? 4 : TASKS.length).map(([task]) => task)
  const workMs = options.short ? 60 : 150
  const checks: Check[] = []

  section('starting three peers: a hub (concord serve --mcp) and two agents (concord mcp, stdio)')
  const hub = await startHub(join(options.data, 'hub'))
  console.log(`  hub      pid ${hub.child.pid}  ${hub.url}  MCP ${hub.mcp}`)
  const [scout, analyst] = await Promise.all([
    stdioAgent('scout', join(options.data, 'scout'), hub.url),
    stdioAgent('analyst', join(options.data, 'analyst'), hub.url),
  ])
  console.log(`  scout    pid ${scout.pid}  concord mcp (stdio), its own peer, synced with the hub`)
  console.log(`  analyst  pid ${analyst.pid}  concord mcp (stdio), its own peer, synced with the hub`)
  const critic = await httpAgent('critic', hub.mcp)
  console.log('  critic   MCP over streamable HTTP at the hub (Bearer token, X-Concord-Peer: critic)')
  const agents = { scout: scout.client, analyst: analyst.client, critic: critic.client }
  let results: Record<string, McpResearchResult> = {}
  try {
    const { tools } = await critic.client.listTools()
    console.log(`  tools: ${tools.map((t) => t.name).join(', ')}`)

    section('the critic opens the notes (Yjs text "notes")')
    console.log(`  topic: ${TOPIC}`)
    await tool(critic.client, 'text_insert', { name: MCP_NAMES.notes, index: 0, text: `# ${TOPIC}\n`, message: 'the document the findings go to' })
    await Promise.all(
      Object.values(agents).map((client) =>
        poll(async () => !(await client.callTool({ name: 'read', arguments: { name: MCP_NAMES.notes } })).isError, Boolean, 15_000),
      ),
    )

    section(`three agents claim tasks (OR-set "claims"), append findings, count them (counter "tasks-done"): ${tasks.join(', ')}`)
    const ids = Object.keys(agents) as Array<keyof typeof agents>
    const done = await Promise.all(ids.map((id) => researchThroughMcp(agents[id], id, tasks, { workMs, settleMs: 250 })))
    results = Object.fromEntries(ids.map((id, i) => [id, done[i]]))
    for (const id of ids) {
      const r = results[id]
      console.log(
        `  ${id.padEnd(8)} completed ${r.completed.length}: ${r.completed.join(', ') || '-'}${r.yielded.length > 0 ? `  (yielded ${r.yielded.join(', ')} to a concurrent claim)` : ''}`,
      )
    }

    section('the critic reviews: an edit by quoting the text (text_replace_match), a closing line')
    const fix = await tool(critic.client, 'text_replace_match', {
      name: MCP_NAMES.notes,
      find: 'CRDTs merge',
      replace: 'CRDTs (conflict-free replicated data types) merge',
      message: 'spell the acronym out for readers',
    })
    console.log(`  replaced at ${fix.index} (${fix.deleted} -> ${fix.inserted} characters)`)
    const before = await tool(critic.client, 'read', { name: MCP_NAMES.notes })
    await tool(critic.client, 'text_insert', {
      name: MCP_NAMES.notes,
      index: before.total,
      text: `Reviewed by critic: ${tasks.length} tasks, one finding each.\n`,
      ifVersion: before.version,
      message: 'sign-off',
    })

    section('convergence: every agent reads the same state through its own MCP server')
    const read = async (client: Client) => {
      const names = [MCP_NAMES.notes, MCP_NAMES.claims, MCP_NAMES.done, MCP_NAMES.counter]
      const values = await Promise.all(names.map((name) => tool(client, 'read', { name })))
      return JSON.stringify(values.map((v) => v.text ?? v.value))
    }
    const converged = await poll(
      () => Promise.all(ids.map((id) => read(agents[id]))),
      (states) => new Set(states).size === 1,
      20_000,
    )
    for (const [i, id] of ids.entries())
      console.log(`  ${id.padEnd(8)} ${converged.value[i].length} characters of state, ${converged.ok ? 'the same as the others' : 'DIFFERENT'}`)
    const [notesText, , doneSet, count] = JSON.parse(converged.value[0]) as [string, string[], string[], number]

    section('the shared document, as every agent holds it')
    for (const line of notesText.trimEnd().split('\n')) console.log(`  ${line}`)

    section('history of "notes" (the hub\'s log: seq, time, who, why)')
    const history = await tool(critic.client, 'history', { name: MCP_NAMES.notes, limit: 100 })
    for (const record of [...history.records].reverse())
      console.log(
        `  #${String(record.seq).padStart(3)}  ${record.at.slice(11, 23)}  ${record.agent.padEnd(8)} ${String(record.bytes).padStart(4)} B  ${record.message ?? '-'}`,
      )
    const historyAgents = new Set(history.records.map((r: { agent: string }) => r.agent))
    const withWhy = history.records.filter((r: { message?: string }) => typeof r.message === 'string' && r.message.length > 0).length

    section('blame of the final document: who wrote each part')
    const blame = await tool(critic.client, 'blame', { name: MCP_NAMES.notes })
    for (const span of blame.blame.spans)
      console.log(
        `  ${String(span.agent ?? '-').padEnd(8)} #${String(span.seq ?? '').padStart(3)}  ${JSON.stringify(span.text.length < span.length ? `${span.text}...` : span.text)}`,
      )
    const contributions = await tool(critic.client, 'blame', { name: MCP_NAMES.counter })
    console.log(`  tasks-done: ${contributions.blame.contributions.map((c: { agent: string; amount: number }) => `${c.agent} ${c.amount}`).join(', ')}`)

    const findingLines = notesText.split('\n').filter((line) => line.startsWith('['))
    // Each span's full text (the blame shows the first characters of each).
    const spans = (blame.blame.spans as Array<{ index: number; length: number; agent: string | null }>).map((span) => ({
      ...span,
      full: notesText.slice(span.index, span.index + span.length),
    }))
    const blamedRight =
      spans.filter((span) => /\(by (\w+)\)/.test(span.full)).every((span) => span.agent === /\(by (\w+)\)/.exec(span.full)![1]) &&
      findingLines.every((line) => spans.some((span) => span.full.includes(line.slice(line.length - 20))))
    const criticEdit = spans.some((span) => span.agent === 'critic' && span.full.includes('conflict-free replicated data types'))
    const completed = Object.values(results).flatMap((r) => r.completed)
    checks.push(
      { ok: converged.ok, what: 'every agent reads the same notes, claims, done and counter through its own MCP server' },
      { ok: tasks.every((task) => doneSet.includes(task)) && count === tasks.length, what: `every task done, counted once (${count}/${tasks.length})` },
      { ok: completed.length === tasks.length && new Set(completed).size === tasks.length, what: 'no task researched twice (claims settled every conflict)' },
      {
        ok: tasks.every((task) => findingLines.filter((line) => line.startsWith(`[${task}]`)).length === 1),
        what: 'the document holds exactly one finding per task, each line whole',
      },
      { ok: ['scout', 'analyst', 'critic'].every((id) => historyAgents.has(id)), what: `the history names each agent (${[...historyAgents].join(', ')})` },
      {
        ok: withWhy === history.records.length,
        what: `every record of the notes says why, on the hub, also those made on the agents' own peers (${withWhy}/${history.records.length})`,
      },
      { ok: blamedRight && criticEdit, what: 'blame gives each finding to the agent that wrote it, and the critic its edit' },
      { ok: ids.filter((id) => id !== 'critic').every((id) => results[id].completed.length > 0), what: 'both agents on their own peers contributed findings' },
    )
  } finally {
    await critic.transport.terminateSession().catch(() => undefined)
    await critic.client.close().catch(() => undefined)
    await Promise.all([scout.client.close(), analyst.client.close()].map((p) => p.catch(() => undefined)))
    const codes = await Promise.all([scout.exited, analyst.exited])
    hub.child.kill('SIGTERM')
    const hubCode = await new Promise<number | null>((resolve) =>
      hub.child.exitCode !== null ? resolve(hub.child.exitCode) : hub.child.once('exit', (code) => resolve(code)),
    )
    checks.push({
      ok: codes.every((code) => code === 0) && hubCode === 0,
      what: `every process exited cleanly (concord mcp: ${codes.join(', ')}; hub: ${hubCode})`,
    })
  }
  return checks
})
