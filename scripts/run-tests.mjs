#!/usr/bin/env node
// Runs the test suite: node:test via tsx over an explicit list of files.
// Fails when a listed file is missing or when the run executed no test
// (node --test exits 0 on an empty run on Node 20).
// Usage: node scripts/run-tests.mjs [--list NAME] [extra files...]
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The adversarial suite (issue 11): attacks on a server child process with
 * credentials, judged from outside (alive, RSS, convergence, the folder).
 */
const adversarial = [
  'test/adversarial/automerge-change.test.ts',
  'test/adversarial/control.test.ts',
  'test/adversarial/wire-floods.test.ts',
  'test/adversarial/connections.test.ts',
  'test/adversarial/y-websocket.test.ts',
  'test/adversarial/documents.test.ts',
  'test/adversarial/libp2p-door.test.ts',
]

/** Test files by area; each area keeps its own block. */
const lists = {
  default: [
    // crdt/
    'test/crdt/codec.test.ts',
    'test/crdt/emitter.test.ts',
    'test/crdt/native-laws.test.ts',
    'test/crdt/native-semantics.test.ts',
    'test/crdt/causal.test.ts',
    'test/crdt/merge-deltas.test.ts',
    'test/crdt/record-selection.test.ts',
    // every wire and storage decoder, fuzzed in a 128 MiB child
    'test/fuzz/decoders.test.ts',
    'test/crdt/messages.test.ts',
    'test/crdt/undo-reset.test.ts',
    'test/crdt/prepare-delta.test.ts',
    // crdt/ documents
    'test/crdt/documents/document-semantics.test.ts',
    'test/crdt/documents/automerge-view.test.ts',
    'test/crdt/documents/document-laws.test.ts',
    'test/crdt/documents/bad-input.test.ts',
    'test/crdt/documents/yjs-local-run.test.ts',
    'test/crdt/documents/traces.test.ts',
    'test/crdt/documents/delta-limits.test.ts',
    'test/crdt/documents/waiting-updates.test.ts',
    // persistence/
    'test/persistence/storage.test.ts',
    'test/persistence/store.test.ts',
    'test/persistence/read-ahead.test.ts',
    'test/persistence/name-meta-digest.test.ts',
    'test/persistence/meta-format.test.ts',
    'test/persistence/many-names-store.test.ts',
    'test/persistence/stored-deltas.test.ts',
    'test/persistence/ttl-names.test.ts',
    'test/persistence/power-cut.test.ts',
    'test/persistence/integrity.test.ts',
    'test/persistence/record-format.test.ts',
    'test/persistence/pipeline.test.ts',
    'test/persistence/crash.test.ts',
    'test/persistence/merge.test.ts',
    'test/persistence/local-runs.test.ts',
    'test/persistence/crash-async.test.ts',
    'test/persistence/full-disk.test.ts',
    'test/persistence/rollback.test.ts',
    'test/persistence/replay-runs.test.ts',
    'test/persistence/names.test.ts',
    'test/persistence/seal.test.ts',
    'test/persistence/seal-format.test.ts',
    'test/persistence/key-codec.test.ts',
    'test/persistence/digest-table.test.ts',
    'test/persistence/digest.test.ts',
    // history (issue 16)
    'test/history/retention.test.ts',
    'test/history/provenance.test.ts',
    'test/history/provenance-sync.test.ts',
    'test/history/signatures.test.ts',
    'test/history/signatures-sync.test.ts',
    'test/history/answer-records.test.ts',
    'test/history/queries.test.ts',
    'test/history/queries-types.test.ts',
    'test/history/restore.test.ts',
    'test/history/selective-revert.test.ts',
    // sync/ and transports/
    'test/transports/memory.test.ts',
    'test/transports/websocket.test.ts',
    'test/transports/browser-websocket.test.ts',
    'test/transports/limits.test.ts',
    'test/sync/messages.test.ts',
    'test/sync/session.test.ts',
    'test/sync/coalesced-acks.test.ts',
    'test/sync/convergence.test.ts',
    'test/sync/rate-limit.test.ts',
    'test/sync/answer-order.test.ts',
    'test/sync/websocket-sync.test.ts',
    'test/sync/answer-bundles.test.ts',
    'test/sync/bounds.test.ts',
    'test/sync/handshake.test.ts',
    'test/sync/admission.test.ts',
    'test/sync/reconcile.test.ts',
    'test/sync/item-index.test.ts',
    'test/sync/resync-timeout.test.ts',
    // transports/libp2p
    'test/transports/libp2p-codec.test.ts',
    'test/transports/libp2p.test.ts',
    'test/transports/libp2p-conformance.test.ts',
    'test/peer/libp2p-peers.test.ts',
    'test/peer/libp2p-gossip.test.ts',
    'test/peer/gossip-codec.test.ts',
    // peer/
    'test/peer/y-websocket-bridge.test.ts',
    'test/peer/y-websocket-peers.test.ts',
    'test/peer/invisible-names.test.ts',
    'test/peer/presence.test.ts',
    // mcp/
    'test/mcp/tools.test.ts',
    'test/mcp/agents.test.ts',
    'test/peer/peer.test.ts',
    'test/peer/status.test.ts',
    'test/peer/sync-host.test.ts',
    'test/peer/many-names.test.ts',
    'test/peer/stored-answers.test.ts',
    'test/peer/bounded-answers.test.ts',
    'test/peer/preload-names.test.ts',
    'test/peer/sim-convergence.test.ts',
    'test/peer/websocket-integration.test.ts',
    'test/peer/out-of-order-documents.test.ts',
    'test/peer/transact.test.ts',
    'test/peer/identity.test.ts',
    'test/peer/connect-listen.test.ts',
    'test/peer/flush-progress.test.ts',
    // a type added through the catalog's recipe (docs/adding-a-type.md)
    'test/peer/added-type.test.ts',
    // PeerOptions vs the test hooks (createTestPeer)
    'test/peer/test-hooks.test.ts',
    // one name for the agent identity (agentId; the deprecated id alias)
    'test/peer/agent-id.test.ts',
    'test/peer/durable-ack.test.ts',
    'test/peer/commit-groups.test.ts',
    'test/peer/document-bounds.test.ts',
    'test/transports/connection-events.test.ts',
    // cli/ and demos/
    'test/peer/peer-disconnect.test.ts',
    'test/cli/cli.test.ts',
    'test/cli/author-keys.test.ts',
    'test/cli/import-kill.test.ts',
    'test/cli/serve.test.ts',
    'test/cli/serve-attacks.test.ts',
    'test/cli/serve-libp2p.test.ts',
    'test/cli/habits.test.ts',
    'test/cli/folder-owner.test.ts',
    'test/cli/mcp.test.ts',
    'test/demos/demos.test.ts',
    'test/demos/report.test.ts',
    // concord-crdt/browser: the bundle's import graph, and real headless Chromium (skipped, saying why, without one)
    'test/browser/bundle.test.ts',
    'test/browser/browser-peer.test.ts',
    'test/browser/browser-storage.test.ts',
    'test/browser/inspector.test.ts',
    'test/inspector/route.test.ts',
    // testing/ (the conformance suites can fail) and the npm package (pack,
    // install, use it as a user; Node 20 and 24)
    'test/testing/suites.test.ts',
    'test/package/package.test.ts',
    // one name, one thing across the package's entry points (scripts/exported-names.mjs)
    'test/package/exported-names.test.ts',
    // adversarial/ (about 90 s: each attack against its own server process)
    ...adversarial,
  ],
  // Long suites, run on demand (npm run test:chaos, npm run test:crash).
  chaos: [
    // crdt/ (the law suite runs 300 cases per property in this list: CONCORD_LAW_RUNS below)
    'test/crdt/native-laws.test.ts',
    // crdt/ documents (laws at 300 cases; whole Automerge traces)
    'test/crdt/documents/document-laws.test.ts',
    'test/crdt/documents/automerge-traces-full.test.ts',
    // sync/ and transports/
    'test/sync/convergence.chaos.test.ts',
    // peer/
    'test/peer/sim-convergence.chaos.test.ts',
  ],
  crash: [
    // persistence/
    'test/persistence/crash.test.ts',
    'test/persistence/crash-async.test.ts',
  ],
  // The attacks alone (npm run test:adversarial); also in `default`.
  adversarial,
}

const args = process.argv.slice(2)
let listName = 'default'
const extra = []
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--list') listName = args[++i]
  else extra.push(args[i])
}
const files = extra.length > 0 ? extra : lists[listName]
if (!files || files.length === 0) {
  console.error(`run-tests: no test files in list "${listName}"`)
  process.exit(1)
}
const missing = files.filter((file) => !existsSync(file))
if (missing.length > 0) {
  console.error(`run-tests: listed test files do not exist: ${missing.join(', ')}`)
  process.exit(1)
}

/** Every `*.test.ts` under `dir`, as a path from the repository root. */
function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'fixtures' ? [] : testFiles(path)
    return entry.name.endsWith('.test.ts') ? [path] : []
  })
}
// A test file no list names would never run: refused, so that a new file is listed where it belongs.
const listed = new Set(Object.values(lists).flat())
const unlisted = testFiles('test').filter((file) => !listed.has(file))
if (unlisted.length > 0) {
  console.error(`run-tests: test files in no list of scripts/run-tests.mjs (add each to the list it belongs to): ${unlisted.join(', ')}`)
  process.exit(1)
}

const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    // A hung test fails instead of blocking the run: 3 minutes per test in the
    // default and adversarial lists (the slowest take seconds), 30 in the long lists.
    `--test-timeout=${listName === 'default' || listName === 'adversarial' ? 180_000 : 1_800_000}`,
    ...files,
  ],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...(listName === 'chaos' ? { CONCORD_LAW_RUNS: '300' } : {}),
      ...process.env,
      CONCORD_TEST_LIST: listName,
    },
  },
)

let tail = ''
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  tail = (tail + chunk.toString('utf8')).slice(-4096)
})
child.on('close', (code, signal) => {
  const match = /(?:ℹ|#) tests (\d+)/.exec(tail)
  const count = match ? Number(match[1]) : 0
  if (code === 0 && count === 0) {
    console.error('run-tests: the run executed no test')
    process.exit(1)
  }
  process.exit(code ?? (signal ? 1 : 0))
})
