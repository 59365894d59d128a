/**
 * Tools that change native types and documents as JSON: `counter_add`,
 * `set_add`, `set_remove`, `register_set`, `flag_set`, `map_set`,
 * `map_delete`, `json_patch`, `revert`. Each creates its name when absent
 * (with the type it says), takes an optional `message` (why) and `ifVersion`
 * (write only if unchanged since that read), and answers with the new
 * version token. Text edits are in text-tools.ts.
 */
import { z } from 'zod'
import type { Operation } from 'fast-json-patch'
import { createReplica } from '../../crdt/registry.ts'
import type { Json } from '../../crdt/types/json.ts'
import type { AutomergeReplica } from '../../crdt/documents/automerge-replica.ts'
import type {
  EWFlagReplica,
  GCounterReplica,
  GSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  ORMapReplica,
  ORSetReplica,
  PNCounterReplica,
} from '../../crdt/types/index.ts'
import { KNOWN_TYPES } from '../../sync/index.ts'
import { invalid } from '../errors.ts'
import { checkPatch, mapDelete, mapSet, patchAutomerge, patchMap } from '../json-edits.ts'
import { MCP_LIMITS } from '../limits.ts'
import { parsePointer, toJson } from '../paging.ts'
import { openToWrite } from '../principal.ts'
import { decodeToken, encodeToken, fingerprint, pinned } from '../version-token.ts'
import { defineTool, ifVersionArg, jsonArg, jsonValue, messageArg, nameArg, seqArg } from './tool.ts'
import { conflict, writeFlow } from './write-flow.ts'

const common = { message: messageArg, ifVersion: ifVersionArg }
const pathArg = z.array(z.string().min(1).max(1024)).min(1).max(MCP_LIMITS.maxPathSegments)

export const counterAdd = defineTool({
  name: 'counter_add',
  title: 'Add to a counter',
  description: 'Adds "amount" (negative to subtract) to a counter; creates a PN-counter when the name is new. Concurrent adds all count.',
  input: z.strictObject({
    name: nameArg,
    amount: z
      .number()
      .int()
      .min(-Number.MAX_SAFE_INTEGER)
      .max(Number.MAX_SAFE_INTEGER)
      .refine((n) => n !== 0, 'amount must not be 0'),
    ...common,
  }),
  async run(args, context) {
    return writeFlow(context, {
      tool: 'counter_add',
      name: args.name,
      accepts: ['pncounter', 'gcounter'],
      creates: 'pncounter',
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica, type }) => {
        if (type === 'gcounter') {
          if (args.amount < 0) throw invalid(`"${args.name}" is a grow-only counter: it cannot go down`)
          ;(replica as GCounterReplica).increment(args.amount)
        } else if (args.amount > 0) (replica as PNCounterReplica).increment(args.amount)
        else (replica as PNCounterReplica).decrement(-args.amount)
        return { value: replica.value() as number }
      },
    })
  },
})

const elementsArg = z.array(jsonValue).min(1).max(MCP_LIMITS.maxElements).describe(`JSON values (1 to ${MCP_LIMITS.maxElements})`)

export const setAdd = defineTool({
  name: 'set_add',
  title: 'Add to a set',
  description:
    'Adds elements (JSON values; identity is the value) to a set; creates an add-wins OR-set when the name is new. ' +
    'A concurrent add beats a remove: use it to claim a task ("task@agent") before working on it.',
  input: z.strictObject({ name: nameArg, elements: elementsArg, ...common }),
  async run(args, context) {
    const elements = args.elements.map((element, i) => jsonArg(element, `elements[${i}]`))
    return writeFlow(context, {
      tool: 'set_add',
      name: args.name,
      accepts: ['orset', 'gset'],
      creates: 'orset',
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        const set = replica as ORSetReplica | GSetReplica
        const added = elements.filter((element) => !set.has(element))
        for (const element of elements) set.add(element)
        return { added, size: set.size }
      },
    })
  },
})

export const setRemove = defineTool({
  name: 'set_remove',
  title: 'Remove from a set',
  description: 'Removes elements from an OR-set, as you see it (an add made concurrently elsewhere survives). Elements not in the set are listed as "missing".',
  input: z.strictObject({ name: nameArg, elements: elementsArg, ...common }),
  async run(args, context) {
    const elements = args.elements.map((element, i) => jsonArg(element, `elements[${i}]`))
    return writeFlow(context, {
      tool: 'set_remove',
      name: args.name,
      accepts: ['orset'],
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        const set = replica as ORSetReplica
        const missing: Json[] = []
        const removed: Json[] = []
        for (const element of elements) (set.delete(element) ? removed : missing).push(element)
        return { removed, missing, size: set.size }
      },
    })
  },
})

export const registerSet = defineTool({
  name: 'register_set',
  title: 'Set a register',
  description:
    'Sets a register to a JSON value; creates a last-writer-wins register when the name is new (the latest write wins; ' +
    'a multi-value register keeps concurrent writes).',
  input: z.strictObject({ name: nameArg, value: jsonValue, ...common }),
  async run(args, context) {
    const value = jsonArg(args.value, 'value')
    return writeFlow(context, {
      tool: 'register_set',
      name: args.name,
      accepts: ['lww-register', 'mv-register'],
      creates: 'lww-register',
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        ;(replica as LWWRegisterReplica | MVRegisterReplica).set(value)
        return {}
      },
    })
  },
})

export const flagSet = defineTool({
  name: 'flag_set',
  title: 'Set a flag',
  description: 'Turns an enable-wins flag on or off (a concurrent enable beats a disable); creates the flag when the name is new.',
  input: z.strictObject({ name: nameArg, enabled: z.boolean(), ...common }),
  async run(args, context) {
    return writeFlow(context, {
      tool: 'flag_set',
      name: args.name,
      accepts: ['ewflag'],
      creates: args.enabled ? 'ewflag' : undefined,
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        const flag = replica as EWFlagReplica
        if (args.enabled) flag.enable()
        else flag.disable()
        return { enabled: flag.enabled() }
      },
    })
  },
})

export const mapSetTool = defineTool({
  name: 'map_set',
  title: 'Set a map field',
  description:
    'Sets the field at "path" (keys, outermost first) of an observed-remove map to a JSON value, creating nested maps on the way; ' +
    'inside a JSON field the rest of the path goes into its value. Creates the map when the name is new.',
  input: z.strictObject({ name: nameArg, path: pathArg.describe('keys, e.g. ["tasks", "t1", "owner"]'), value: jsonValue, ...common }),
  async run(args, context) {
    const value = jsonArg(args.value, 'value')
    return writeFlow(context, {
      tool: 'map_set',
      name: args.name,
      accepts: ['ormap'],
      creates: 'ormap',
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        mapSet((replica as ORMapReplica).root, args.path, value, `"${args.name}"`)
        return {}
      },
    })
  },
})

export const mapDeleteTool = defineTool({
  name: 'map_delete',
  title: 'Delete a map field',
  description: 'Deletes the field at "path" of a map (as you see it: a concurrent update of it survives). A path that does not exist is an error.',
  input: z.strictObject({ name: nameArg, path: pathArg, ...common }),
  async run(args, context) {
    return writeFlow(context, {
      tool: 'map_delete',
      name: args.name,
      accepts: ['ormap'],
      message: args.message,
      ifVersion: args.ifVersion,
      change: ({ replica }) => {
        mapDelete((replica as ORMapReplica).root, args.path, `"${args.name}"`)
        return {}
      },
    })
  },
})

const pointer = z.string().max(4096)
const patchOp = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('add'), path: pointer, value: jsonValue }),
  z.strictObject({ op: z.literal('remove'), path: pointer }),
  z.strictObject({ op: z.literal('replace'), path: pointer, value: jsonValue }),
  z.strictObject({ op: z.literal('move'), from: pointer, path: pointer }),
  z.strictObject({ op: z.literal('copy'), from: pointer, path: pointer }),
  z.strictObject({ op: z.literal('test'), path: pointer, value: jsonValue }),
])

export const jsonPatch = defineTool({
  name: 'json_patch',
  title: 'Patch a document',
  description:
    'Applies a JSON Patch (RFC 6902: add, remove, replace, move, copy, test) to an Automerge document or a map, all or none ' +
    '(a failed "test" refuses the whole patch). A string replaced by a string in an Automerge document is a text edit that merges with concurrent ones. ' +
    'Creates an Automerge document (or a map, with type "ormap") when the name is new.',
  input: z.strictObject({
    name: nameArg,
    patch: z.array(patchOp).min(1).max(MCP_LIMITS.maxPatchOps),
    type: z.enum(['automerge', 'ormap']).optional().describe('the type of a new name (default automerge)'),
    ...common,
  }),
  async run(args, context) {
    const patch = args.patch.map((op, i) => {
      parsePointer(op.path)
      if ('from' in op) parsePointer(op.from)
      return 'value' in op ? { ...op, value: jsonArg(op.value, `patch[${i}].value`) } : op
    }) as Operation[]
    return writeFlow(context, {
      tool: 'json_patch',
      name: args.name,
      accepts: ['automerge', 'ormap'],
      creates: args.type ?? 'automerge',
      message: args.message,
      ifVersion: args.ifVersion,
      checkNew: () => void checkPatch({}, patch),
      change: ({ replica, type }) => {
        const before = toJson(replica.value())
        checkPatch(before, patch)
        if (type === 'automerge') {
          patchAutomerge(replica as AutomergeReplica, patch, before, args.message)
        } else {
          // A map takes a patch operation by operation: a dry run on a copy first, so that it applies all or none.
          const scratch = createReplica('ormap', { agentId: replica.agentId, snapshot: replica.snapshot() }) as ORMapReplica
          patchMap(scratch.root, patch, `"${args.name}"`)
          patchMap((replica as ORMapReplica).root, patch, `"${args.name}"`)
        }
        return { operations: patch.length }
      },
    })
  },
})

export const revert = defineTool({
  name: 'revert',
  title: 'Revert to a past version',
  description:
    'Brings a name back to its value right after record "seq" (from history), as a new change that every peer gets ' +
    '(history keeps everything in between). Answers seq null when the value already equals it.',
  input: z.strictObject({ name: nameArg, seq: seqArg, ...common }),
  annotations: { destructiveHint: true },
  async run(args, context) {
    const { peer, principal } = context
    const expected = args.ifVersion === undefined ? undefined : decodeToken(args.ifVersion)
    const opened = await openToWrite(peer, principal, args.name, KNOWN_TYPES, undefined, 'revert')
    if (expected && fingerprint(opened.replica) !== expected.fingerprint) return conflict(context, opened, expected, args.ifVersion!)
    const seq = await peer.revert(opened.name, args.seq, {
      agent: principal.local ? undefined : principal.agent,
      message: args.message,
      meta: { via: 'mcp', tool: 'revert' },
    })
    const { token } = await pinned(peer.store, opened.name, opened.replica, () => undefined)
    return { result: { name: opened.name, type: opened.type, version: encodeToken(token), seq, revertedTo: args.seq } }
  },
})

/** Every JSON and native writing tool. */
export const WRITE_TOOLS = [counterAdd, setAdd, setRemove, registerSet, flagSet, mapSetTool, mapDeleteTool, jsonPatch, revert]
