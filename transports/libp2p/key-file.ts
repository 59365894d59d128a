/**
 * The libp2p identity of a Concord peer, kept beside its data.
 *
 * The private key is created once (Ed25519) and stored in
 * `<dir>/libp2p-key`, so the PeerId (a hash of the public key) stays the same
 * across restarts and other peers' allowlists keep matching it.
 *
 * File format (`encodeKeyFile` / `decodeKeyFile`): one version byte (1), then
 * the libp2p protobuf encoding of the private key (`privateKeyToProtobuf`).
 * The file is written atomically (temporary file, fsync, rename, fsync of the
 * folder) with mode 0600: a crash never leaves a half-written key, and only
 * the owner can read it.
 */
import { randomBytes } from 'node:crypto'
import { constants as fsConstants } from 'node:fs'
import { link, mkdir, open, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'

/** Name of the key file inside a peer's data folder. */
export const KEY_FILE_NAME = 'libp2p-key'

/** Current version byte of the key file. */
export const KEY_FILE_VERSION = 1

/** Encodes a private key as the bytes of a key file. */
export function encodeKeyFile(key: PrivateKey): Uint8Array {
  const body = privateKeyToProtobuf(key)
  const out = new Uint8Array(1 + body.byteLength)
  out[0] = KEY_FILE_VERSION
  out.set(body, 1)
  return out
}

/**
 * Decodes the bytes of a key file.
 * @throws ConcordError `CONCORD_UNSUPPORTED_VERSION` for a newer version,
 * DecodeError (`CONCORD_DECODE_ERROR`) for anything else that is not a key.
 */
export function decodeKeyFile(bytes: Uint8Array): PrivateKey {
  if (bytes.byteLength === 0) throw new DecodeError('libp2p key file is empty')
  const version = bytes[0]
  if (version > KEY_FILE_VERSION) {
    throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `libp2p key file version ${version} is newer than ${KEY_FILE_VERSION}`)
  }
  if (version !== KEY_FILE_VERSION) throw new DecodeError(`libp2p key file has unknown version ${version}`)
  try {
    return privateKeyFromProtobuf(bytes.subarray(1))
  } catch (error) {
    throw new DecodeError('libp2p key file does not hold a private key', { cause: error })
  }
}

/**
 * Loads the peer's private key from `<dir>/libp2p-key`, creating the folder
 * and a new Ed25519 key on first use.
 * @throws ConcordError `CONCORD_STORAGE_ERROR` when the file cannot be read or
 * written, `CONCORD_DECODE_ERROR` when it is corrupt (never overwritten: a
 * replaced key would silently change the PeerId).
 */
export async function loadOrCreatePrivateKey(dir: string): Promise<PrivateKey> {
  const path = join(dir, KEY_FILE_NAME)
  let bytes: Uint8Array | undefined
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConcordError(ErrorCodes.STORAGE_ERROR, `cannot read ${path}`, { cause: error })
    }
  }
  if (bytes !== undefined) return decodeKeyFile(bytes)
  const key = await generateKeyPair('Ed25519')
  try {
    await mkdir(dir, { recursive: true })
    await writeFileAtomic(dir, KEY_FILE_NAME, encodeKeyFile(key))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      // Another process created it between our read and our write: use theirs.
      return decodeKeyFile(await readFile(path))
    }
    throw new ConcordError(ErrorCodes.STORAGE_ERROR, `cannot write ${path}`, { cause: error })
  }
  return key
}

/**
 * Writes `bytes` to `dir/name` atomically with mode 0600; fails with EEXIST
 * (leaving the existing file alone) when the file already exists.
 */
async function writeFileAtomic(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const target = join(dir, name)
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`)
  const handle = await open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600)
  try {
    await handle.writeFile(bytes)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    // link() fails with EEXIST instead of replacing: a racing creator wins.
    await link(temp, target)
  } finally {
    await rm(temp, { force: true })
  }
  await syncFolder(dir)
}

/** fsyncs a folder so a new name in it survives a power cut (best effort where unsupported). */
async function syncFolder(dir: string): Promise<void> {
  let handle
  try {
    handle = await open(dir, fsConstants.O_RDONLY)
    await handle.sync()
  } catch {
    // Some platforms cannot fsync a folder; the file itself is synced.
  } finally {
    await handle?.close()
  }
}
