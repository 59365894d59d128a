/**
 * The author keys a CLI command checks signatures with (`history`,
 * `verify`): the folder's owner is bound to the Ed25519 key in
 * `<dir>/libp2p-key` when the folder has one (the key a peer with libp2p
 * signs its own records with), and `--author-key ID=PEERID` binds any
 * author id to the key an Ed25519 PeerId names (repeatable; it wins over
 * the key file, for a peer that signs with another `signingKey`). Without
 * a binding, a verified signature shows as `unbound`.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { publicKeyOfPeerId } from '../crdt/signature.ts'
import { decodeKeyFile, KEY_FILE_NAME } from '../transports/libp2p/key-file.ts'
import { CliError, ExitCodes } from './exit-codes.ts'

/** Collects a repeatable option's values. */
export const collectValues = (value: string, all: string[]): string[] => [...all, value]

/** Parses `--author-key ID=PEERID` values; a usage error (exit 2) for one that is not an id and an Ed25519 PeerId. */
export function parseAuthorKeys(values: readonly string[]): Map<string, Uint8Array> {
  const keys = new Map<string, Uint8Array>()
  for (const value of values) {
    const at = value.lastIndexOf('=')
    const id = at > 0 ? value.slice(0, at) : ''
    const peerId = at > 0 ? value.slice(at + 1) : ''
    const key = peerId === '' ? undefined : publicKeyOfPeerId(peerId)
    if (id === '' || id.length > 256 || key === undefined) {
      throw new CliError(ExitCodes.USAGE, `--author-key must be ID=PEERID with an Ed25519 PeerId (12D3KooW...), got "${value.slice(0, 80)}"`)
    }
    keys.set(id, key)
  }
  return keys
}

/** The Ed25519 public key of `<dir>/libp2p-key`, or undefined (no file, another key type, or a file that does not decode). */
export async function folderKey(dir: string): Promise<Uint8Array | undefined> {
  let bytes: Uint8Array
  try {
    bytes = await readFile(join(dir, KEY_FILE_NAME))
  } catch {
    return undefined
  }
  try {
    const key = decodeKeyFile(bytes)
    return key.type === 'Ed25519' ? key.publicKey.raw : undefined
  } catch {
    return undefined
  }
}
