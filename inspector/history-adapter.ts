/**
 * Where the inspector gets blame and diff from: the store's own history
 * queries (persistence/history/: blame replays the log with each record's
 * author and message; diff compares two states). Nothing here computes
 * anything.
 */
export { blame, type Blame, type BlameReport } from '../persistence/history/blame.ts'
export { changesBetween, type Changes, type TextSpan } from '../persistence/history/diff.ts'
export { toJson } from '../persistence/history/json-values.ts'
