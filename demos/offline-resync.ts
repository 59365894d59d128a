/**
 * Demo 2, offline resync: an agent goes offline, keeps working (its writes
 * acknowledged by its own disk), is killed with SIGKILL, restarts from its
 * LevelDB folder, reconnects and resyncs. It prints the bytes the resync
 * exchanged beside the size of the full state (what a newcomer with an
 * empty folder has to download).
 *
 *   npm run demo:offline [-- --short]
 */
import { bytes, poll, runDemo, section, type Check } from './lib/demo-runner.ts'

await runDemo('demo-offline', 'Demo 2 — offline resync: offline work, SIGKILL, restart from disk, resync only the gap', async (cluster, options) => {
  const corpus = options.short ? 1500 : 5000
  const offlineWrites = options.short ? 10 : 25
  const same = async (ids: string[]) => {
    const digests = await Promise.all(ids.map((id) => cluster.request(id, 'digest', {})))
    return new Set(digests.map((d) => d.digest)).size === 1
  }

  section('a hub and a field agent, each its own process and LevelDB folder')
  const [hub, field] = await cluster.startAll(['hub', 'field'])
  console.log(`  hub    pid ${hub.child.pid}  ${hub.url}\n  field  pid ${field.child.pid}  (dials the hub)`)
  await cluster.request('hub', 'seed', { prefix: 'doc', count: corpus, textBytes: 80 })
  await cluster.request('field', 'links', { urls: [hub.url] })
  const initial = await poll(() => same(['hub', 'field']), Boolean, 30_000)
  const initialStats = await cluster.request('field', 'stats', {})
  console.log(
    `  the hub holds ${corpus} facts and ${corpus} Yjs paragraphs; the field synced them: ${bytes(initialStats.bytesIn + initialStats.bytesOut)} exchanged`,
  )

  section('the field agent goes offline and keeps working; the hub keeps working too')
  await cluster.request('field', 'links', { urls: [] })
  const offline = await poll(
    () => cluster.request('field', 'stats', {}),
    (s) => s.peers.length === 0,
    10_000,
  )
  const fieldIds = Array.from({ length: offlineWrites }, (_, i) => `field-offline-${i}`)
  const hubIds = Array.from({ length: offlineWrites }, (_, i) => `hub-meanwhile-${i}`)
  const [fieldAcked] = await Promise.all([cluster.request('field', 'write', { ids: fieldIds }), cluster.request('hub', 'write', { ids: hubIds })])
  console.log(`  field: ${fieldAcked.acked.length} writes acknowledged by its own disk while offline; hub: ${hubIds.length} writes meanwhile`)

  section('SIGKILL the field agent, then restart it from its LevelDB folder')
  const oldPid = field.child.pid
  await cluster.kill('field')
  console.log(`  killed pid ${oldPid} (no shutdown, no flush)`)
  const restarted = await cluster.start('field')
  const afterRestart = await cluster.request('field', 'state', {})
  const survived = fieldAcked.acked.filter((id) => afterRestart.facts.includes(id)).length
  console.log(
    `  restarted as pid ${restarted.child.pid} in ${restarted.startupMs} ms: its folder holds ${afterRestart.facts.length} facts, ${survived}/${fieldAcked.acked.length} of its offline writes`,
  )

  section('reconnect and resync')
  await cluster.request('field', 'links', { urls: [hub.url] })
  const resynced = await poll(() => same(['hub', 'field']), Boolean, 30_000)
  const resync = await cluster.request('field', 'stats', {})
  const resyncBytes = resync.bytesIn + resync.bytesOut
  const hubState = await cluster.request('hub', 'state', {})
  const fieldState = await cluster.request('field', 'state', {})

  section('the size of the full state: a newcomer with an empty folder syncs from the hub')
  const newcomer = await cluster.start('newcomer')
  await cluster.request('newcomer', 'links', { urls: [hub.url] })
  const fresh = await poll(() => same(['hub', 'newcomer']), Boolean, 30_000)
  const full = await cluster.request('newcomer', 'stats', {})
  const fullBytes = full.bytesIn + full.bytesOut
  const ratio = resyncBytes / Math.max(1, fullBytes)
  console.log(`  newcomer pid ${newcomer.child.pid} synced ${hubState.facts.length} facts`)
  console.log('')
  console.log(`  resync after offline work + SIGKILL : ${bytes(resyncBytes).padStart(10)}  (field, in + out)`)
  console.log(`  full state (newcomer, empty folder) : ${bytes(fullBytes).padStart(10)}  (in + out)`)
  console.log(`  full state on disk (hub)            : ${bytes(full.diskBytes).padStart(10)}`)
  console.log(`  the resync cost ${(ratio * 100).toFixed(1)}% of a full sync`)

  return [
    { ok: initial.ok, what: 'the field agent synced the corpus from the hub' },
    { ok: offline.ok, what: 'the field agent went offline (no session left)' },
    {
      ok: survived === fieldAcked.acked.length,
      what: `after SIGKILL its folder held every write it acknowledged offline (${survived}/${fieldAcked.acked.length})`,
    },
    { ok: resynced.ok, what: 'after reconnecting, hub and field hold the same state' },
    { ok: fieldIds.every((id) => hubState.facts.includes(id)), what: 'the offline writes reached the hub' },
    { ok: hubIds.every((id) => fieldState.facts.includes(id)), what: 'what the hub wrote meanwhile reached the field' },
    { ok: fresh.ok, what: 'a newcomer with an empty folder reached the same state' },
    {
      ok: ratio < 0.2,
      what: `the resync exchanged only the gap: ${bytes(resyncBytes)} vs ${bytes(fullBytes)} for the full state (${(ratio * 100).toFixed(1)}%, limit 20%)`,
    },
  ] satisfies Check[]
})
