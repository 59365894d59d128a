/**
 * The causal core shared by every native CRDT: dots, the compacted causal
 * context, and the dot stores with their generic join.
 */
export { dot, compareDots, compareStrings, formatDot, type Dot } from './dot.ts'
export { RangeSet } from './range-set.ts'
export { CausalContext, MAX_COUNTER, readContext, writeContext } from './causal-context.ts'
export {
  DotSet,
  DotFun,
  DotMap,
  emptyLike,
  isEmptyStore,
  storeDots,
  cloneStore,
  joinStoreInto,
  restrictStore,
  addStoreDots,
  type DotEntry,
  type DotStore,
  type JoinTrack,
} from './dot-store.ts'
