// Redis Stream entry ids (`<ms>-<seq>`), the positions of a shared document's log.

/**
 * Compares stream ids as numbers without splitting them (it runs for every feed message): parts have
 * no leading zeros, so the longer is larger, and parts of one length compare as text.
 * @param {string} a @param {string} b
 */
export function compareIds (a, b) {
  const aDash = a.indexOf('-')
  const bDash = b.indexOf('-')
  return aDash - bDash ||
    compareText(a.slice(0, aDash), b.slice(0, bDash)) ||
    (a.length - aDash) - (b.length - bDash) ||
    compareText(a.slice(aDash + 1), b.slice(bDash + 1))
}

/** @param {string} a @param {string} b */
const compareText = (a, b) => a < b ? -1 : a > b ? 1 : 0
