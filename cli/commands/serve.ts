/**
 * `concord serve`: a long-running peer (relay) on a LevelDB folder, serving
 * the Concord protocol at ws://HOST:PORT/concord and stock y-websocket
 * clients at ws://HOST:PORT/yjs/<room>, and with `--libp2p` (or any libp2p
 * flag) over libp2p too: its PeerId is kept in the folder, its multiaddrs
 * are printed. Stops cleanly on SIGINT/SIGTERM: libp2p stopped first,
 * sessions closed, every name checkpointed per policy, the log flushed.
 */
import { readFile } from 'node:fs/promises'
import { type Command, Option } from 'commander'
import { createPeer } from '../../peer/index.ts'
import type { AuthOptions } from '../../peer/options.ts'
import { checkAclIdentities, parseAcl } from '../acl.ts'
import { action, dirOption, parseInteger, type CliContext } from '../context.ts'
import { CliError, ExitCodes } from '../exit-codes.ts'
import { storedAgentId } from '../open-store.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { ConnectOptions, Peer } from '../../peer/peer.ts'
import { backoffDelay } from '../../transports/reconnect.ts'
import { parseWebSocketUrl } from '../../transports/websocket/index.ts'
import { mcpRoute } from '../../mcp/index.ts'
import { untilStopped } from '../stop-signal.ts'

/** Agent id of a new folder served without `--id`. */
export const DEFAULT_SERVE_ID = 'concord-serve'

interface ServeOptions {
  dir: string
  port: string
  host: string
  token?: string
  acl?: string
  id?: string
  connect: string[]
  yWebsocket: boolean
  mcp?: boolean
  ui?: boolean
  libp2p?: boolean
  libp2pListen: string[]
  bootstrap: string[]
  allow: string[]
  gossipsub?: boolean
  mdns?: boolean
  tlsCert?: string
  tlsKey?: string
  tlsCa?: string
  legacyBearer?: boolean
  json?: boolean
}

/** Reads a file named by an option; a missing file is exit 3. */
async function readOptionFile(path: string, option: string): Promise<Buffer> {
  return readFile(path).catch((error) => {
    throw new CliError(ExitCodes.NOT_FOUND, `cannot read the ${option} file ${path}: ${(error as Error).message}`)
  })
}

const collect = (value: string, all: string[]): string[] => [...all, value]

/** Registers serve. */
export function registerServe(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .addOption(dirOption('the data folder (created if missing)'))
    .option('-p, --port <port>', 'TCP port (0 = any free port)', '4400')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .addOption(new Option('--token <token>', 'shared secret every connecting peer must present').env('CONCORD_TOKEN'))
    .option('--acl <file>', 'JSON access-control file: per-peer tokens and per-name access rules (see README)')
    .option('--tls-cert <file>', 'serve wss:// with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', 'the private key (PEM) of --tls-cert')
    .option('--tls-ca <file>', 'trust this CA (PEM) for --connect wss://... (a private CA or a self-signed peer)')
    .option('--legacy-bearer', 'also accept (and send) protocol-1 tokens in the clear, for peers not yet upgraded; over wss:// only')
    .option('--id <id>', `agent id of a new folder (default "${DEFAULT_SERVE_ID}"; an existing folder keeps its own)`)
    .option(
      '--connect <url>',
      'also dial this peer and keep the link up: ws://... or a libp2p multiaddr /.../p2p/<PeerId> (repeatable)',
      collect,
      [] as string[],
    )
    .option('--no-y-websocket', 'do not serve y-websocket clients at /yjs/<room>')
    .option('--mcp', 'also serve MCP (streamable HTTP) at /mcp, for LLM agents, with the same --token/--acl (README, "LLM agents (MCP)")')
    .option('--ui', 'also serve the inspector page at /ui (a read-only browser peer; open it with #peer=<id>&token=<token>; README, "Inspector")')
    .option('--libp2p', 'serve over libp2p too (PeerId kept in the folder; listens on /ip4/HOST/tcp/0 unless --libp2p-listen)')
    .option(
      '--libp2p-listen <multiaddr>',
      'libp2p listen address, e.g. /ip4/0.0.0.0/tcp/4401 or .../tcp/4402/ws (repeatable; implies --libp2p)',
      collect,
      [] as string[],
    )
    .option(
      '--bootstrap <multiaddr>',
      'libp2p bootstrap peer /.../p2p/<PeerId>, redialled when it goes away (repeatable; implies --libp2p)',
      collect,
      [] as string[],
    )
    .option('--allow <peerId>', 'admit only these libp2p PeerIds (repeatable; implies --libp2p)', collect, [] as string[])
    .option('--gossipsub', 'fan live deltas out over gossipsub (implies --libp2p)')
    .option('--mdns', 'find peers on the local network with mDNS (implies --libp2p)')
    .option('--json', 'print the listening address as one JSON line')
    .description('run a long-lived peer/relay on a folder: WebSocket (and y-websocket) endpoint; clean shutdown on SIGINT/SIGTERM')
    .action(
      action(ctx, 'serve', async (out, options: ServeOptions) => {
        const libp2p = Boolean(
          options.libp2p || options.gossipsub || options.mdns || options.libp2pListen.length > 0 || options.bootstrap.length > 0 || options.allow.length > 0,
        )
        for (const remote of options.connect) {
          if (!remote.startsWith('/')) {
            try {
              parseWebSocketUrl(remote)
            } catch (error) {
              throw new CliError(ExitCodes.USAGE, `--connect ${remote}: ${(error as Error).message}`)
            }
          }
        }
        const port = parseInteger(options.port, '--port')
        if (port > 65535) throw new CliError(ExitCodes.USAGE, `--port must be at most 65535, got ${port}`)
        const acl =
          options.acl === undefined
            ? undefined
            : parseAcl(
                await readFile(options.acl, 'utf8').catch((error) => {
                  throw new CliError(ExitCodes.NOT_FOUND, `cannot read the ACL file ${options.acl}: ${(error as Error).message}`)
                }),
                options.acl,
              )
        if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
          throw new CliError(ExitCodes.USAGE, '--tls-cert and --tls-key go together')
        }
        const tls =
          options.tlsCert !== undefined
            ? { cert: await readOptionFile(options.tlsCert, '--tls-cert'), key: await readOptionFile(options.tlsKey!, '--tls-key') }
            : undefined
        const ca = options.tlsCa !== undefined ? await readOptionFile(options.tlsCa, '--tls-ca') : undefined
        const identities = acl ? checkAclIdentities(acl, options.acl!, options.token !== undefined) : undefined
        const stored = await storedAgentId(options.dir)
        if (stored !== undefined && options.id !== undefined && options.id !== stored) {
          throw new CliError(ExitCodes.USAGE, `${options.dir} belongs to agent "${stored}", not "${options.id}"`)
        }
        const id = stored ?? options.id ?? DEFAULT_SERVE_ID
        // --token alone: a shared secret (accepted and presented). With per-peer
        // tokens in the ACL: those are accepted, --token is what this peer presents.
        // Rules that do not name peers do not depend on the claimed id (checked above otherwise).
        const extra = { legacyBearer: options.legacyBearer === true, trustClaimedIds: identities?.byPeer === false }
        const auth: AuthOptions = acl?.tokens !== undefined ? { accept: acl.tokens, token: options.token, ...extra } : { token: options.token, ...extra }
        const peer = await createPeer({
          agentId: id,
          dir: options.dir,
          auth,
          access: acl?.access,
          libp2p: libp2p
            ? {
                bootstrap: options.bootstrap,
                allow: options.allow.length > 0 ? options.allow : undefined,
                gossipsub: Boolean(options.gossipsub),
                mdns: Boolean(options.mdns),
              }
            : undefined,
        })
        let stopping = false
        const stopDialing = new AbortController()
        // Before listening: the open-access warning is given by listen itself.
        peer.on('warning', ({ message }) => out.note(`concord serve: warning: ${message}`))
        try {
          const routes = options.mcp ? [mcpRoute(peer)] : []
          const { url, port: bound } = await peer.listen({ port, host: options.host, yWebsocket: options.yWebsocket, tls, routes, ui: Boolean(options.ui) })
          const p2p = libp2p
            ? await peer.listen({
                libp2p: {
                  addresses: options.libp2pListen.length > 0 ? options.libp2pListen : [`/${options.host.includes(':') ? 'ip6' : 'ip4'}/${options.host}/tcp/0`],
                },
              })
            : undefined
          const base = url.replace(/\/concord$/, '')
          const mcp = options.mcp ? `${base.replace(/^ws/, 'http')}/mcp` : null
          const ui = options.ui ? `${base.replace(/^ws/, 'http')}/ui` : null
          out.result(
            { url, port: bound, agentId: id, dir: options.dir, yWebsocket: options.yWebsocket ? `${base}/yjs/<room>` : null, mcp, ui, libp2p: p2p ?? null },
            () =>
              `concord serve: agent "${id}" on ${options.dir}\nlistening on ${url}` +
              (options.yWebsocket ? `\ny-websocket clients: ${base}/yjs/<room>` : '') +
              (mcp ? `\nMCP (streamable HTTP): ${mcp}` : '') +
              (ui ? `\ninspector: ${ui}` : '') +
              (p2p ? `\nlibp2p PeerId ${p2p.peerId}${p2p.multiaddrs.map((ma) => `\nlibp2p: ${ma}`).join('')}` : '') +
              '\nCtrl-C to stop',
          )
          peer.on('error', ({ error }) => out.note(`concord serve: ${error.code}: ${error.message}`))
          peer.on('refused', ({ by, reason }) => out.note(`concord serve: handshake refused (${by}): ${reason}`))
          for (const remote of options.connect)
            keepConnecting(peer, remote, ca ? { tls: { ca } } : {}, stopDialing.signal, (line) => out.note(`concord serve: ${line}`))
          ctx.onListening?.({ url, port: bound, libp2p: p2p })
          const signal = await untilStopped(ctx.signal)
          stopping = true
          out.note(`concord serve: ${signal}: flushing and closing`)
        } finally {
          stopDialing.abort()
          await peer.close()
        }
        if (stopping) out.note('concord serve: stopped, everything flushed')
      }),
    )
}

/**
 * Dials `remote` until a first handshake succeeds (a relay may start before
 * the peer it links to), reporting each failure; from then on the peer
 * reconnects by itself. Refusals for good (credentials, version) end it.
 */
export function keepConnecting(peer: Peer, remote: string, options: ConnectOptions, signal: AbortSignal, note: (line: string) => void, attempt = 0): void {
  if (signal.aborted) return
  peer.connect(remote, { ...options, signal }).then(
    () => note(`connected to ${remote}`),
    (error: unknown) => {
      if (signal.aborted) return
      const retry = isConcordError(error, ErrorCodes.UNREACHABLE) || isConcordError(error, ErrorCodes.TIMEOUT)
      const message = isConcordError(error) ? `${error.code}: ${error.message}` : String(error)
      if (!retry) {
        note(`connect ${remote}: ${message} (not retried)`)
        return
      }
      const delayMs = backoffDelay(attempt, { initialMs: 500, maxMs: 15_000 })
      note(`connect ${remote}: ${message}; retrying in ${(delayMs / 1000).toFixed(1)} s`)
      const timer = setTimeout(() => keepConnecting(peer, remote, options, signal, note, attempt + 1), delayMs)
      signal.addEventListener('abort', () => clearTimeout(timer), { once: true })
    },
  )
}
