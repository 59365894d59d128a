/**
 * EWFlag (enable-wins flag) as a causal CRDT: a dot set. enable() is a new
 * dot superseding the observed ones; disable() removes the observed dots.
 * An enable concurrent with a disable has a dot the disabler never saw, so
 * enable wins. The flag is on while the set holds a dot. Its core, view and
 * replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotSet } from '../causal/dot-store.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { NativeTypeDef } from './native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** Whether the flag is enabled. */
export function flagEnabled(store: DotSet): boolean {
  return store.dots.length > 0
}

/** Delta of enable(). */
export function flagEnable(store: DotSet, alloc: DotAllocator): CausalState<DotSet> {
  const d = alloc.next()
  return { store: new DotSet([d]), ctx: CausalContext.of([d, ...store.dots]) }
}

/** Delta of disable(), or null when already disabled. */
export function flagDisable(store: DotSet): CausalState<DotSet> | null {
  if (store.dots.length === 0) return null
  return { store: new DotSet(), ctx: CausalContext.of(store.dots) }
}

/** EWFlag: the catalog's entry. */
export const ewflagType: NativeTypeDef<DotSet, 'ewflag'> = defineNativeType({
  tag: 'ewflag',
  code: 8,
  spec: { kind: 'set' },
  precedence: 8,
  opener: 'flag',
  field: { accessor: 'flag', view: (owner, path) => new EWFlagView(owner, path) },
  create: (options) => new EWFlagReplica(options),
  empty: () => new DotSet(),
  value: flagEnabled,
  restore(current, past, alloc) {
    if (flagEnabled(current) === flagEnabled(past)) return null
    return flagEnabled(past) ? flagEnable(current, alloc) : flagDisable(current)
  },
})

/** An enable-wins flag. */
export class EWFlagView extends View {
  /** Turns the flag on (a new enable, winning over concurrent disables). */
  enable(): boolean {
    return this.change<DotSet>((store, alloc) => flagEnable(store, alloc))
  }

  /** Turns the flag off as observed here (false when already off). */
  disable(): boolean {
    return this.change<DotSet>((store) => flagDisable(store))
  }

  /** Whether the flag is on. */
  enabled(): boolean {
    return flagEnabled(this.store<DotSet>())
  }
}

/** Enable-wins flag. */
export class EWFlagReplica extends CausalReplica<DotSet> {
  private readonly view = new EWFlagView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(ewflagType, options)
  }
  /** Turns the flag on. */
  enable(): boolean {
    return this.view.enable()
  }
  /** Turns the flag off as observed here (false when already off). */
  disable(): boolean {
    return this.view.disable()
  }
  /** Whether the flag is on. */
  enabled(): boolean {
    return this.view.enabled()
  }
  /** Whether the flag is on. */
  override value(): boolean {
    return this.view.enabled()
  }
}

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** An enable-wins flag. */
    flag(name: string, options?: O): Promise<EWFlagReplica>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The enable-wins flag field `name`. */
    flag(name: string): EWFlagView
  }
}
