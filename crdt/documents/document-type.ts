/**
 * What a document type (Yjs, Automerge) is to the catalog
 * (crdt/catalog.ts): its tag, the name of the peer's typed opener, and its
 * replica factory. Its file defines it with {@link defineDocumentType}.
 */
import type { ReplicaFactory } from '../replica.ts'

/** A document type as the catalog holds it. */
export interface DocumentTypeDef<Tag extends string = string> {
  readonly kind: 'document'
  /** The stable tag: persisted and sent on the wire. Never renamed. */
  readonly tag: Tag
  /** The name of the peer's typed opener (`peer.yjs(name)`), declared in the type's file on `TypedOpeners`. */
  readonly opener: string
  readonly factory: ReplicaFactory
}

/** Makes a document type's definition (in the type's own file); the catalog lists it. */
export function defineDocumentType<const Tag extends string>(def: Omit<DocumentTypeDef<Tag>, 'kind'>): DocumentTypeDef<Tag> {
  return { ...def, kind: 'document' }
}
