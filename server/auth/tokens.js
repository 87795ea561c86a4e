import { randomBytes } from 'node:crypto'
import { SignJWT, errors, jwtVerify } from 'jose'
import { AppError } from '../errors.js'
import { ROLES } from '../../isomorphic/events.js'

// Join tokens: HS256 JWTs naming a session, a user and a role. `jti` names the token for revocation;
// `gen` is its user's revocation generation at minting, so revoking the user (incrementing it)
// refuses it without any clock, which could be stepped back or skewed.

const ISSUER = 'tandem'
const ALGORITHM = 'HS256'

/**
 * @typedef {object} Grant what a verified token allows
 * @property {string} session
 * @property {string} user
 * @property {'editor' | 'viewer'} role
 * @property {string} tokenId
 * @property {number} generation its user's revocation generation when it was minted
 * @property {number | undefined} legacyIssuedAtMs only on a token minted before generations (generation 0)
 * @property {number} expiresAtMs
 */

export class TokenIssuer {
  /** @param {string} secret at least 32 characters */
  constructor (secret) {
    this.key = new TextEncoder().encode(secret)
  }

  /**
   * @param {{ session: string, user: string, role: 'editor' | 'viewer', generation: number, ttlSeconds: number }} claims
   */
  async issue ({ session, user, role, generation, ttlSeconds }) {
    const issuedAtMs = Date.now()
    const expiresAt = Math.floor(issuedAtMs / 1000) + ttlSeconds
    const tokenId = randomBytes(12).toString('base64url')
    const token = await new SignJWT({ sid: session, role, gen: generation })
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(user)
      .setJti(tokenId)
      .setIssuedAt(Math.floor(issuedAtMs / 1000))
      .setExpirationTime(expiresAt)
      .sign(this.key)
    return { token, tokenId, expiresAt: new Date(expiresAt * 1000).toISOString() }
  }

  /** @param {unknown} token @returns {Promise<Grant>} */
  async verify (token) {
    if (typeof token !== 'string' || token === '') throw new AppError('UNAUTHORIZED', 'a token is required')
    /** @type {import('jose').JWTPayload} */
    let payload
    try {
      ({ payload } = await jwtVerify(token, this.key, { issuer: ISSUER, algorithms: [ALGORITHM] }))
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw new AppError('UNAUTHORIZED', 'the token has expired')
      throw new AppError('UNAUTHORIZED', 'the token is invalid')
    }
    const { sid, sub, role, jti, gen, iat_ms: issuedAtMs, exp } = payload
    const legacy = gen === undefined
    if (typeof sid !== 'string' || typeof sub !== 'string' || typeof jti !== 'string' ||
        !(/** @type {unknown[]} */ (Object.values(ROLES)).includes(role)) || typeof exp !== 'number' ||
        (legacy ? typeof issuedAtMs !== 'number' : !Number.isSafeInteger(gen) || /** @type {number} */ (gen) < 0)) {
      throw new AppError('UNAUTHORIZED', 'the token is invalid')
    }
    return {
      session: sid,
      user: sub,
      role: /** @type {'editor' | 'viewer'} */ (role),
      tokenId: jti,
      generation: legacy ? 0 : /** @type {number} */ (gen),
      legacyIssuedAtMs: legacy ? /** @type {number} */ (issuedAtMs) : undefined,
      expiresAtMs: exp * 1000
    }
  }
}
