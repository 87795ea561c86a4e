import { ObservableV2 } from 'lib0/observable'

/** @typedef {string | (() => Promise<string> | string)} TokenSource a token, or a function that fetches one */

// How a server asks for a token it was not given: none at all (UNAUTHORIZED), or only the
// handshake's, which opens another session (FORBIDDEN, on a shared socket).
const ASKS_FOR_TOKEN = new Set(['UNAUTHORIZED', 'FORBIDDEN'])

/**
 * The token a handshake or a join carries. A string is always sent. A function is called only once
 * the server has asked for a token, by refusing an attempt that carried none, and then for every
 * later one: a server with auth off never asks, so a function that cannot work there (a backend
 * route that does not exist) costs nothing, and the same code runs with auth on or off.
 * @extends {ObservableV2<{ error: (error: Error) => void }>}
 */
export class JoinToken extends ObservableV2 {
  #source
  #asked

  /** @param {TokenSource | undefined} source */
  constructor (source) {
    super()
    this.#source = source
    this.#asked = typeof source !== 'function'
  }

  /** Whether a refused token can be replaced by a fresh one: the source is a function. */
  get renewable () {
    return typeof this.#source === 'function'
  }

  /** The token given as a string, or undefined (none, or a function). */
  get fixed () {
    return typeof this.#source === 'string' ? this.#source : undefined
  }

  /**
   * The token to send now: undefined while the server has not asked for one. A function that fails
   * (or returns no string) emits `error` and rejects.
   * @returns {Promise<string | undefined>}
   */
  async get () {
    const source = this.#source
    if (typeof source !== 'function') return source
    if (!this.#asked) return undefined
    try {
      const fresh = await source()
      if (typeof fresh !== 'string' || fresh === '') throw new TypeError(`it returned ${typeof fresh}, not a token`)
      return fresh
    } catch (err) {
      const error = new Error(`the server requires a join token, and the token function failed: ${/** @type {Error} */ (err)?.message ?? err}`, { cause: err })
      this.emit('error', [error])
      throw error
    }
  }

  /**
   * Tells it of a refusal. Returns true when the server asked for a token the attempt did not carry
   * (the function was not called yet): the next attempt carries one, and may follow at once.
   * @param {string | undefined} code
   */
  askedBy (code) {
    if (this.#asked || code === undefined || !ASKS_FOR_TOKEN.has(code)) return false
    this.#asked = true
    return true
  }
}
