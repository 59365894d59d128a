/**
 * `concord mcp`: an MCP server over stdio for one LLM agent (Claude
 * Desktop, Claude Code, any MCP client starts it as a child process). It
 * runs a Concord peer on its own LevelDB folder, as the agent `--id`,
 * synced with the `--connect` peers, and serves the MCP tools, resources
 * and prompts (mcp/) on stdin/stdout; notes go to stderr only (stdout is
 * the protocol). Ends when the client closes stdin, or on SIGINT/SIGTERM:
 * the peer is closed cleanly (everything flushed).
 */
import { readFile } from 'node:fs/promises'
import { type Command, Option } from 'commander'
import { createPeer } from '../../peer/index.ts'
import { serveMcpStdio } from '../../mcp/index.ts'
import { parseWebSocketUrl } from '../../transports/websocket/index.ts'
import { action, dirOption, type CliContext } from '../context.ts'
import { CliError, ExitCodes } from '../exit-codes.ts'
import { storedAgentId } from '../open-store.ts'
import { keepConnecting } from './serve.ts'
import { untilStopped } from '../stop-signal.ts'

interface McpOptions {
  dir: string
  id?: string
  connect: string[]
  token?: string
  tlsCa?: string
}

const collect = (value: string, all: string[]): string[] => [...all, value]

/** Registers mcp. */
export function registerMcp(program: Command, ctx: CliContext): void {
  program
    .command('mcp')
    .addOption(dirOption("the data folder of this agent's peer (created if missing)"))
    .option('--id <agent>', 'the agent id of a new folder, logged with every change (an existing folder keeps its own)')
    .option('--connect <url>', 'sync with this peer: ws://... or a libp2p multiaddr /.../p2p/<PeerId> (repeatable)', collect, [] as string[])
    .addOption(new Option('--token <token>', 'the secret this peer proves to the peers it connects to').env('CONCORD_TOKEN'))
    .option('--tls-ca <file>', 'trust this CA (PEM) for --connect wss://...')
    .description('serve MCP over stdio for an LLM agent: a Concord peer on a folder, synced with --connect peers (README, "LLM agents (MCP)")')
    .action(
      action(ctx, 'mcp', async (out, options: McpOptions) => {
        for (const remote of options.connect) {
          if (remote.startsWith('/')) continue
          try {
            parseWebSocketUrl(remote)
          } catch (error) {
            throw new CliError(ExitCodes.USAGE, `--connect ${remote}: ${(error as Error).message}`)
          }
        }
        const stored = await storedAgentId(options.dir)
        if (stored !== undefined && options.id !== undefined && options.id !== stored) {
          throw new CliError(ExitCodes.USAGE, `${options.dir} belongs to agent "${stored}", not "${options.id}"`)
        }
        const id = stored ?? options.id
        if (id === undefined) throw new CliError(ExitCodes.USAGE, 'a new folder needs --id <agent>: the agent id its changes are logged under')
        const ca =
          options.tlsCa === undefined
            ? undefined
            : await readFile(options.tlsCa).catch((error) => {
                throw new CliError(ExitCodes.NOT_FOUND, `cannot read the --tls-ca file ${options.tlsCa}: ${(error as Error).message}`)
              })
        const peer = await createPeer({ agentId: id, dir: options.dir, auth: options.token === undefined ? undefined : { token: options.token } })
        const stopDialing = new AbortController()
        try {
          peer.on('error', ({ error }) => out.note(`concord mcp: ${error.code}: ${error.message}`))
          const stdio = await serveMcpStdio(peer, { stdin: ctx.stdin?.() ?? process.stdin, stdout: ctx.io.stdout })
          out.note(`concord mcp: agent "${id}" on ${options.dir}, serving MCP on stdio`)
          for (const remote of options.connect)
            keepConnecting(peer, remote, ca ? { tls: { ca } } : {}, stopDialing.signal, (line) => out.note(`concord mcp: ${line}`))
          const why = await untilStopped(ctx.signal, (stop) => {
            void stdio.closed.then(() => stop('the client closed stdin'))
          })
          out.note(`concord mcp: ${why}: flushing and closing`)
          await stdio.close()
        } finally {
          stopDialing.abort()
          await peer.close()
        }
      }),
    )
}
