/**
 * The CRDT law suite (testing/crdt-laws.ts, `concord-crdt/testing`) run against both document
 * types through the replica interface.
 *
 * Equality: equal `value()` and equal versions (Yjs: equal state vectors and
 * delete sets, via `Y.equalSnapshots`; Automerge: equal heads). Snapshot
 * bytes are not compared across replicas: two converged Yjs docs may split
 * their structs differently, so their encodings differ although their state
 * is the same.
 */
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { bytesEqual } from '../../../crdt/codec.ts'
import type { Replica } from '../../../crdt/replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { isDeepStrictEqual } from 'node:util'
import { runCrdtLaws } from '../../../testing/index.ts'
import { automergeOp, opsInitial, yjsOp, type OpsDoc } from './document-ops.ts'

runCrdtLaws(
  { describe, it },
  {
    type: 'yjs',
    create: (id) => new YjsReplica({ agentId: agentId(id) }),
    load: (snapshot, id) => new YjsReplica({ agentId: agentId(id), snapshot }),
    randomOp: yjsOp,
    equal: (a: Replica, b: Replica) =>
      isDeepStrictEqual(a.value(), b.value()) && Y.equalSnapshots(Y.snapshot((a as YjsReplica).doc), Y.snapshot((b as YjsReplica).doc)),
  },
)

runCrdtLaws(
  { describe, it },
  {
    type: 'automerge',
    create: (id) => new AutomergeReplica<OpsDoc>({ agentId: agentId(id), initial: opsInitial() }),
    load: (snapshot, id) => new AutomergeReplica<OpsDoc>({ agentId: agentId(id), snapshot }),
    randomOp: automergeOp,
    equal: (a: Replica, b: Replica) => isDeepStrictEqual(a.value(), b.value()) && bytesEqual(a.version(), b.version()),
    // Deltas and snapshots are checksummed, but a version (heads) with a bit
    // flipped is just another, unknown version: deltaSince answers it.
    // A delta of several change chunks cut at a chunk boundary is a valid,
    // smaller delta (whole, checksummed changes): it may be accepted, and the
    // suite then checks the replica stays consistent.
    truncationAlwaysInvalid: false,
  },
)
