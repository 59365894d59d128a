/**
 * The access-control file of `concord serve --acl FILE` (JSON):
 *
 * ```json
 * {
 *   "tokens": { "planner": "s3cret", "viewer": "v1ew" },
 *   "default": "read",
 *   "rules": [
 *     { "peer": "planner", "name": "*", "access": "write" },
 *     { "peer": "*", "name": "private/*", "access": "none" }
 *   ]
 * }
 * ```
 *
 * - `tokens` (optional): per-peer credentials a connecting peer must present
 *   (instead of, or when no, `--token` shared secret).
 * - `rules`: the first rule whose `peer` and `name` match decides; a pattern
 *   is an exact string, `*`, or a prefix ending in `*`.
 * - `default`: the access when no rule matches (default `write`).
 *
 * Rules that name peers (a `peer` other than `*`) need per-peer `tokens`:
 * with one shared `--token`, or none, any peer could claim another's id and
 * get its access, so `concord serve` refuses such a file
 * ({@link checkAclIdentities}).
 */
import type { Access } from '../sync/host.ts'
import type { AccessFunction } from '../peer/options.ts'
import { CliError, ExitCodes } from './exit-codes.ts'

/** One rule of an ACL file. */
export interface AclRule {
  readonly peer: string
  readonly name: string
  readonly access: Access
}

/** A parsed ACL file. */
export interface Acl {
  readonly tokens?: Readonly<Record<string, string>>
  readonly default: Access
  readonly rules: readonly AclRule[]
  /** The access function of the rules. */
  readonly access: AccessFunction
}

const ACCESS = new Set(['none', 'read', 'write'])

/** True when `pattern` (exact, `*`, or `prefix*`) matches `value`. */
export function matchPattern(pattern: string, value: string): boolean {
  if (pattern === '*') return true
  if (pattern.endsWith('*')) return value.startsWith(pattern.slice(0, -1))
  return pattern === value
}

/** Parses and validates an ACL file's text; a bad file is a usage error (exit 2) naming what is wrong. */
export function parseAcl(text: string, file = 'ACL file'): Acl {
  const bad = (why: string): never => {
    throw new CliError(ExitCodes.USAGE, `${file}: ${why}`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return bad(`not JSON (${(error as Error).message})`)
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return bad('must be a JSON object')
  const { tokens, rules = [], default: fallback = 'write' } = json as Record<string, unknown>
  for (const key of Object.keys(json)) if (!['tokens', 'rules', 'default'].includes(key)) bad(`unknown field "${key}"`)
  if (typeof fallback !== 'string' || !ACCESS.has(fallback)) bad('"default" must be "none", "read" or "write"')
  if (tokens !== undefined) {
    if (tokens === null || typeof tokens !== 'object' || Array.isArray(tokens)) bad('"tokens" must be an object { agentId: token }')
    for (const [peer, token] of Object.entries(tokens as object)) {
      if (typeof token !== 'string' || token.length === 0) bad(`token of "${peer}" must be a non-empty string`)
    }
  }
  if (!Array.isArray(rules)) return bad('"rules" must be an array')
  const parsed: AclRule[] = rules.map((rule: unknown, i: number) => {
    if (rule === null || typeof rule !== 'object') return bad(`rule ${i + 1} must be an object`)
    const { peer = '*', name = '*', access } = rule as Record<string, unknown>
    if (typeof peer !== 'string' || typeof name !== 'string') return bad(`rule ${i + 1}: "peer" and "name" must be strings`)
    if (typeof access !== 'string' || !ACCESS.has(access)) return bad(`rule ${i + 1}: "access" must be "none", "read" or "write"`)
    return { peer, name, access: access as Access }
  })
  const defaultAccess = fallback as Access
  return {
    tokens: tokens as Record<string, string> | undefined,
    default: defaultAccess,
    rules: parsed,
    access: (agentId, name) => parsed.find((rule) => matchPattern(rule.peer, agentId) && matchPattern(rule.name, name))?.access ?? defaultAccess,
  }
}

/**
 * Refuses an ACL whose rules give peers their own access when nothing tells
 * peers apart (no per-peer `tokens`; `--token` alone is one secret shared by
 * every peer), or whose `tokens` give two peers one secret. Returns whether
 * the rules depend on the agent id at all.
 * @throws CliError exit 2, naming the rule and how to fix it.
 */
export function checkAclIdentities(acl: Acl, file: string, sharedToken: boolean): { readonly byPeer: boolean } {
  const bad = (why: string): never => {
    throw new CliError(ExitCodes.USAGE, `${file}: ${why}`)
  }
  const owners = new Map<string, string>()
  for (const [peer, token] of Object.entries(acl.tokens ?? {})) {
    const other = owners.get(token)
    if (other !== undefined) bad(`"tokens" gives "${other}" and "${peer}" one token: either could claim the other's id. Give each peer its own token`)
    owners.set(token, peer)
  }
  const index = acl.rules.findIndex((rule) => rule.peer !== '*')
  if (index < 0) return { byPeer: false }
  if (acl.tokens === undefined) {
    const rule = acl.rules[index]
    const apart = sharedToken ? '--token is one secret shared by every peer' : 'there is no --token and no "tokens": anyone may connect'
    bad(
      `rule ${index + 1} gives peer "${rule.peer}" its own access, but peers are not told apart (${apart}): ` +
        `any peer could claim the id "${rule.peer}" and get its access. Give each peer its own token in "tokens"`,
    )
  }
  return { byPeer: true }
}
