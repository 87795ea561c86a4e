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
 * Who may join which document: mints join tokens, checks them (signature, expiry, session,
 * revocation) and records revocations. Revocations are stored beside the sessions, so every process
 * refuses a revoked token at its next join; closing the sockets that hold it is the cluster's job.
 */
export class Access {
  /**
   * @param {object} deps
   * @param {import('../config.js').Config} deps.config
   * @param {import('../storage/session-store.js').SessionStore} deps.store
   */
  constructor ({ config, store }) {
    this.store = store
    this.config = config
    this.issuer = config.authSecret ? new TokenIssuer(config.authSecret) : null
  }

  get enabled () {
    return this.issuer !== null
  }

  /**
   * @param {string} session
   * @param {{ user: string, role: 'editor' | 'viewer', ttl?: number }} request ttl in seconds
   */
  async issue (session, { user, role, ttl }) {
    if (!this.issuer) throw new AppError('BAD_REQUEST', 'authentication is off (no AUTH_SECRET): tokens are not needed')
    // Read before signing: a revocation of the user that lands meanwhile refuses this token too.
    const [generation = 0] = await fromStorage(this.store.revocations(session, [generationKey(user)]))
    const ttlSeconds = ttl ?? this.config.tokenTtlSeconds
    return { ...await this.issuer.issue({ session, user, role, generation, ttlSeconds }), user, role }
  }

  /**
   * Checks a handshake's token: signed here, unexpired and not revoked (which documents it opens is
   * checked at join).
   * @param {unknown} token
   */
  async verifyHandshake (token) {
    if (!this.issuer) return
    await this.#checkRevoked(await this.issuer.verify(token))
  }

  /**
   * Checks a token against the document it is meant to open.
   * @param {unknown} token
   * @param {string} docId
   * @returns {Promise<Membership>}
   */
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
   * Revokes every token of `user` minted so far: each carries the generation it was minted in, and
   * the stored one is now past it, whatever any clock says.
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
 * When the user was last revoked (ms), as recorded before generations; read only to order tokens of
 * that time (no `gen`), which expire within MAX_TOKEN_TTL_SECONDS of it.
 * @param {string} user
 */
const legacyUserKey = user => `user:${user}`
