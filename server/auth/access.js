import { AppError, fromStorage } from '../errors.js'
import { ROLES } from '../../isomorphic/events.js'
import { TokenIssuer } from './tokens.js'

/**
 * @typedef {object} Membership what one socket may do in one document
 * @property {'editor' | 'viewer'} role
 * @property {string | null} user null while auth is off
 * @property {string | null} tokenId
 * @property {number | null} expiresAtMs when the token expires (ms since the epoch); null while auth is off
 */

/** While auth is off (development without AUTH_SECRET) everyone joins as an editor. */
const OPEN_ACCESS = Object.freeze({ role: ROLES.EDITOR, user: null, tokenId: null, expiresAtMs: null })

/**
 * Who may join which document: mints and checks join tokens, records revocations beside the
 * sessions, so every process refuses a revoked token at its next join.
 */
export class Access {
  /** @param {{ config: import('../config.js').Config, store: import('../storage/session-store.js').SessionStore }} deps */
  constructor ({ config, store }) {
    this.store = store
    this.config = config
    this.issuer = config.authSecret ? new TokenIssuer(config.authSecret) : null
  }

  get enabled () {
    return this.issuer !== null
  }

  /** @param {string} session @param {{ user: string, role: 'editor' | 'viewer', ttl?: number }} request ttl in s */
  async issue (session, { user, role, ttl }) {
    if (!this.issuer) throw new AppError('BAD_REQUEST', 'authentication is off (no AUTH_SECRET): tokens are not needed')
    // Read before signing: a revocation of the user that lands meanwhile refuses this token too.
    const [generation = 0] = await fromStorage(this.store.revocations(session, [generationKey(user)]))
    const ttlSeconds = ttl ?? this.config.tokenTtlSeconds
    return { ...await this.issuer.issue({ session, user, role, generation, ttlSeconds }), user, role }
  }

  /** Signed here, unexpired, not revoked; the documents it opens are checked at join. @param {unknown} token */
  async verifyHandshake (token) {
    if (!this.issuer) return
    await this.#checkRevoked(await this.issuer.verify(token))
  }

  /** @param {unknown} token @param {string} docId the document it must open @returns {Promise<Membership>} */
  async authorize (token, docId) {
    if (!this.issuer) return OPEN_ACCESS
    const grant = await this.issuer.verify(token)
    if (grant.session !== docId) throw new AppError('FORBIDDEN', `the token is for session ${grant.session}, not ${docId}`)
    await this.#checkRevoked(grant)
    return { role: grant.role, user: grant.user, tokenId: grant.tokenId, expiresAtMs: grant.expiresAtMs }
  }

  /** @param {import('./tokens.js').Grant} grant */
  async #checkRevoked (grant) {
    const [tokenRevoked, generation = 0, legacyRevokedAtMs] = await fromStorage(this.store.revocations(
      grant.session, [tokenKey(grant.tokenId), generationKey(grant.user), legacyUserKey(grant.user)]
    ))
    const legacyRevoked = grant.legacyIssuedAtMs !== undefined && legacyRevokedAtMs !== undefined &&
      grant.legacyIssuedAtMs <= legacyRevokedAtMs
    if (tokenRevoked !== undefined || grant.generation < generation || legacyRevoked) throw revoked()
  }

  /** @param {string} session @param {string} tokenId */
  async revokeToken (session, tokenId) {
    await fromStorage(this.store.revoke(session, tokenKey(tokenId)))
  }

  /**
   * Every token of `user` so far: each carries the generation it was minted in, now past, whatever any clock says.
   * @param {string} session @param {string} user
   */
  async revokeUser (session, user) {
    await fromStorage(this.store.increment(session, generationKey(user)))
  }
}

const revoked = () => new AppError('UNAUTHORIZED', 'the token has been revoked')
/** @param {string} tokenId */
const tokenKey = tokenId => `token:${tokenId}`
/** @param {string} user */
const generationKey = user => `gen:${user}`
/**
 * When the user was last revoked (ms), before generations: orders only tokens of that time, long expired.
 * @param {string} user
 */
const legacyUserKey = user => `user:${user}`
