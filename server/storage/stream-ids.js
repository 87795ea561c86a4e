// Redis Stream entry ids (`<ms>-<seq>`), the positions of a shared document's log.

/** Compares two stream ids as numbers: negative, zero or positive. @param {string} a @param {string} b */
export function compareIds (a, b) {
  const [am, as] = a.split('-').map(Number)
  const [bm, bs] = b.split('-').map(Number)
  return am - bm || as - bs
}
