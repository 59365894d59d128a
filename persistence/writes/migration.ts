/**
 * The migration of a newly hydrated name: its schema's steps run from its
 * stored schema version up to the current one, and their changes are
 * logged, with the new version, as one unit.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import type { NameEntry } from '../names/entry.ts'
import type { Schema } from '../options.ts'
import { buildAppends } from './unit-records.ts'
import type { LogItem } from './writes.ts'

/** @internal what a migration needs of the write path: a unit assembled from the changes `fn` makes. */
export interface UnitAssembler {
  /** Runs `fn` and returns the local changes made meanwhile (not written). */
  assemble(fn: () => void): LogItem[]
}

/**
 * @internal runs the migration steps of a newly hydrated `entry` up to
 * `schema` and logs their changes with the new schema version, as one
 * unit. A step that throws fails the hydration (`CONCORD_MIGRATION_FAILED`)
 * and the entry stops being persisted.
 */
export async function migrateEntry(context: StoreContext, writes: UnitAssembler, entry: NameEntry, schema: Schema): Promise<void> {
  const from = entry.state.meta.schema
  let items: LogItem[]
  try {
    items = writes.assemble(() => {
      for (let version = from + 1; version <= schema.version; version++) {
        const step = schema.migrations?.[version]
        if (!step) throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": no migration to schema version ${version}`)
        try {
          step(entry.replica, { name: entry.name, from: version - 1, to: version })
        } catch (error) {
          throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": migration to version ${version} failed: ${(error as Error)?.message}`, {
            cause: error,
          })
        }
      }
    })
  } catch (error) {
    entry.detach()
    throw error
  }
  const { state } = entry
  await context.committer.enqueue({
    sync: entry.durability.mode === 'sync',
    states: [state],
    build: (b) => {
      buildAppends(context, b, items)
      b.setMeta(state, { ...b.meta(state), schema: schema.version })
    },
  })
  context.events.emit('migrated', { name: entry.name, from, to: schema.version })
}
