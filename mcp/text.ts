/**
 * Text edits on a Yjs document's top-level text, the edits a model makes:
 * insert at an index, delete a range, replace a range, replace the first
 * match of a string. Indices count UTF-16 code units, as JavaScript string
 * indices do (and as the text a read returns is indexed); a position inside
 * a surrogate pair is refused.
 *
 * An edit made on a stale view (a version token older than the document)
 * still merges, as a concurrent Yjs edit would: it is resolved against the
 * text as it was read (the document at the token's seq), the insertion
 * point is carried over by the characters around it (before the one that
 * followed it, if still there; else after the one before it; else a Yjs
 * relative position), and a deletion takes exactly the characters that
 * were read, never text inserted since.
 */
import * as Y from 'yjs'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import { clip, invalid } from './errors.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'

/** One text edit, in the coordinates of the text it was made on. */
export type TextEdit =
  | { readonly op: 'insert'; readonly index: number; readonly text: string }
  | { readonly op: 'delete'; readonly index: number; readonly length: number }
  | { readonly op: 'replace'; readonly index: number; readonly length: number; readonly text: string }
  | { readonly op: 'replace_match'; readonly find: string; readonly text: string; readonly occurrence: number }

/** What an edit did, in the coordinates of the text after it. */
export interface TextEditResult {
  readonly field: string
  /** Where the inserted text starts (or where the deletion was). */
  readonly index: number
  readonly deleted: number
  readonly inserted: number
  /** The text's length after the edit. */
  readonly length: number
}

export { chooseTextField, documentFields } from '../persistence/history/json-values.ts'

function checkIndex(text: string, index: number, what: string): void {
  if (!Number.isSafeInteger(index) || index < 0 || index > text.length) throw invalid(`${what} ${index} is outside the text (0..${text.length})`)
  const before = index > 0 ? text.charCodeAt(index - 1) : 0
  if (index < text.length && before >= 0xd800 && before <= 0xdbff)
    throw invalid(`${what} ${index} is inside a surrogate pair (a character of two UTF-16 units)`)
}

/** The edit as a range of `text` (where it deletes and what it inserts), checked. */
export function locate(text: string, edit: TextEdit): { index: number; length: number; insert: string } {
  switch (edit.op) {
    case 'insert':
      checkIndex(text, edit.index, 'index')
      return { index: edit.index, length: 0, insert: edit.text }
    case 'delete':
    case 'replace': {
      checkIndex(text, edit.index, 'index')
      if (!Number.isSafeInteger(edit.length) || edit.length < 0) throw invalid('length must be a whole number >= 0')
      checkIndex(text, edit.index + edit.length, 'end')
      return { index: edit.index, length: edit.length, insert: edit.op === 'replace' ? edit.text : '' }
    }
    case 'replace_match': {
      if (edit.find.length === 0) throw invalid('find must not be empty')
      let at = -1
      for (let n = 0, from = 0; n < edit.occurrence; n++) {
        at = text.indexOf(edit.find, from)
        if (at < 0) break
        from = at + edit.find.length
      }
      if (at < 0) {
        throw new ConcordError(
          ErrorCodes.NOT_FOUND,
          `the text does not contain "${clip(edit.find, 80)}"${edit.occurrence > 1 ? ` ${edit.occurrence} times` : ''}`,
        )
      }
      return { index: at, length: edit.find.length, insert: edit.text }
    }
  }
}

/** The ids of the visible characters of `type` in `[index, index + length)`, as (client, clock, length) runs. */
function idsOfRange(type: Y.Text, index: number, length: number): Array<{ client: number; clock: number; length: number }> {
  const runs: Array<{ client: number; clock: number; length: number }> = []
  let position = 0
  for (let item = type._start; item !== null && position < index + length; item = item.right) {
    if (item.deleted || !item.countable) continue
    const start = Math.max(index, position)
    const end = Math.min(index + length, position + item.length)
    if (end > start) runs.push({ client: item.id.client, clock: item.id.clock + (start - position), length: end - start })
    position += item.length
  }
  return runs
}

/** The index in `type` of the visible character with id (client, clock), or undefined when it is deleted or unknown. */
function indexOfId(type: Y.Text, client: number, clock: number): number | undefined {
  let position = 0
  for (let item = type._start; item !== null; item = item.right) {
    if (item.deleted || !item.countable) continue
    if (item.id.client === client && clock >= item.id.clock && clock < item.id.clock + item.length) return position + (clock - item.id.clock)
    position += item.length
  }
  return undefined
}

/**
 * Where text inserted at `index` of the text as read (after deleting
 * `length` from there) goes in `type` now: before the character that
 * followed it when read, if that one is still there; else after the one
 * that preceded it; else where a Yjs relative position puts it.
 */
function carriedIndex(readText: Y.Text, index: number, length: number, type: Y.Text, doc: Y.Doc): number {
  const right = index + length < readText.length ? idsOfRange(readText, index + length, 1)[0] : undefined
  const atRight = right && indexOfId(type, right.client, right.clock)
  if (atRight !== undefined) return atRight
  const left = index > 0 ? idsOfRange(readText, index - 1, 1)[0] : undefined
  const atLeft = left && indexOfId(type, left.client, left.clock)
  if (atLeft !== undefined) return atLeft + 1
  const relative = Y.createRelativePositionFromTypeIndex(readText, index, index > 0 ? -1 : 0)
  return Y.createAbsolutePositionFromRelativePosition(relative, doc)?.index ?? 0
}

/** Deletes, in `type`, the visible characters whose ids are in `runs` (those deleted since are gone already). */
function deleteIds(type: Y.Text, runs: ReadonlyArray<{ client: number; clock: number; length: number }>): number {
  const ranges: Array<[number, number]> = []
  let position = 0
  for (let item = type._start; item !== null; item = item.right) {
    if (item.deleted || !item.countable) continue
    for (const run of runs) {
      if (run.client !== item.id.client) continue
      const start = Math.max(run.clock, item.id.clock)
      const end = Math.min(run.clock + run.length, item.id.clock + item.length)
      if (end > start) ranges.push([position + (start - item.id.clock), end - start])
    }
    position += item.length
  }
  ranges.sort((a, b) => b[0] - a[0])
  let deleted = 0
  for (const [at, count] of ranges) {
    type.delete(at, count)
    deleted += count
  }
  return deleted
}

/**
 * Applies `edit` to the text `field` of `replica` (inside the caller's
 * transaction). With `readDoc` (the document as the client read it), the
 * edit is resolved there and carried over (see the module comment).
 */
export function applyTextEdit(replica: YjsReplica, field: string, edit: TextEdit, readDoc?: Y.Doc): TextEditResult {
  const text = replica.doc.getText(field)
  if (readDoc === undefined) {
    const range = locate(text.toString(), edit)
    // One Yjs transaction: one change, one record.
    replica.doc.transact(() => {
      if (range.length > 0) text.delete(range.index, range.length)
      if (range.insert.length > 0) text.insert(range.index, range.insert)
    })
    return { field, index: range.index, deleted: range.length, inserted: range.insert.length, length: text.length }
  }
  const readText = readDoc.getText(field)
  const range = locate(readText.toString(), edit)
  const runs = idsOfRange(readText, range.index, range.length)
  let index = 0
  let deleted = 0
  replica.doc.transact(() => {
    deleted = deleteIds(text, runs)
    index = carriedIndex(readText, range.index, range.length, text, replica.doc)
    if (range.insert.length > 0) text.insert(index, range.insert)
  })
  return { field, index, deleted, inserted: range.insert.length, length: text.length }
}
