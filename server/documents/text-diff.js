import diff from 'fast-diff'

/**
 * A change to a text, in UTF-16 code units (JavaScript string indices, as Y.Text counts): `delete`
 * units from `at`, then `insert` there. A list of them is sorted and does not overlap, every `at`
 * against the text before any of them.
 * @typedef {{ at: number, delete: number, insert: string }} TextEdit
 */

// Myers' diff (fast-diff) takes time in (N + M) × D, D the size of the difference, and has no
// deadline: a large text unlike the stored one would hold the event loop. So lines are diffed first,
// by their content without indentation (a re-indented line stays paired with its old self), cut
// where too many at lines found once in each text, and characters only within each changed run of
// lines; a diff past MAX_DIFF_UNITS, or once a text's diffs have spent DIFF_BUDGET, becomes one
// replacement (docs/PERFORMANCE.md, "Server edits").
const MAX_DIFF_UNITS = 2048
const DIFF_BUDGET = 8 * 1024 * 1024
/** How many times a text too long to diff at once is cut at anchors before a part is replaced whole. */
const MAX_ANCHOR_DEPTH = 4

/**
 * The edits that turn `before` into `after`: few and small where the texts are alike, so that
 * editors' concurrent edits and cursors elsewhere survive them.
 * @param {string} before @param {string} after @returns {TextEdit[]}
 */
export function editsBetween (before, after) {
  const out = new Edits()
  if (before !== after) out.lines(linesOf(before), linesOf(after), 0)
  return out.list
}

/** Each line keeps its line break. @param {string} text */
const linesOf = text => text === '' ? [] : text.split(/(?<=\n)/)

/** @param {string[]} lines */
const lengthOf = lines => lines.reduce((sum, line) => sum + line.length, 0)

class Edits {
  /** @type {TextEdit[]} */
  list = []
  /** what the diffs of this text may still cost, in (N + M) × D */
  budget = DIFF_BUDGET

  /** @param {string[]} before @param {string[]} after @param {number} at where `before` starts @param {number} [depth] of anchoring */
  lines (before, after, at, depth = 0) {
    let start = 0
    while (start < before.length && start < after.length && before[start] === after[start]) at += before[start++].length
    let end = 0
    while (end < before.length - start && end < after.length - start &&
      before[before.length - 1 - end] === after[after.length - 1 - end]) end++
    const old = before.slice(start, before.length - end)
    const now = after.slice(start, after.length - end)
    if (old.length + now.length > MAX_DIFF_UNITS && depth < MAX_ANCHOR_DEPTH && this.budget > 0) {
      this.#anchored(old, now, at, depth)
      return
    }
    if (old.length + now.length > MAX_DIFF_UNITS || this.budget <= 0) {
      this.run(old, now, at)
      return
    }
    /** @type {Map<string, string>} each line's content without indentation, as one character */
    const tokens = new Map()
    const tokenOf = (/** @type {string} */ line) => {
      const key = line.trim()
      let token = tokens.get(key)
      if (token === undefined) tokens.set(key, token = String.fromCharCode(tokens.size))
      return token
    }
    const ops = this.#diff(old.map(tokenOf).join(''), now.map(tokenOf).join(''))
    let i = 0
    let j = 0
    for (let k = 0; k < ops.length; k++) {
      const [op, tokensOfOp] = ops[k]
      if (op === diff.EQUAL) {
        for (let n = 0; n < tokensOfOp.length; n++, i++, j++) {
          this.chars(old[i], now[j], at)
          at += old[i].length
        }
        continue
      }
      // A changed run: what it deletes, then what it inserts (fast-diff puts deletions first).
      const deleted = op === diff.DELETE ? tokensOfOp.length : 0
      const inserted = op === diff.INSERT ? tokensOfOp.length : ops[k + 1]?.[0] === diff.INSERT ? ops[++k][1].length : 0
      const run = old.slice(i, i + deleted)
      this.run(run, now.slice(j, j + inserted), at)
      at += lengthOf(run)
      i += deleted
      j += inserted
    }
  }

  /**
   * Too many lines for one diff: the lines found once in each text, in the same order in both
   * (patience diff's anchors), cut it into the smaller diffs between them.
   * @param {string[]} old @param {string[]} now @param {number} at @param {number} depth
   */
  #anchored (old, now, at, depth) {
    const anchors = uniqueAnchors(old, now)
    if (anchors.length === 0) {
      this.run(old, now, at)
      return
    }
    let i = 0
    let j = 0
    for (const [oldAt, nowAt] of anchors) {
      const gap = old.slice(i, oldAt)
      this.lines(gap, now.slice(j, nowAt), at, depth + 1)
      at += lengthOf(gap)
      this.chars(old[oldAt], now[nowAt], at)
      at += old[oldAt].length
      i = oldAt + 1
      j = nowAt + 1
    }
    this.lines(old.slice(i), now.slice(j), at, depth + 1)
  }

  /**
   * Changed lines: by character when small, line by line when as many lines replace as many, else
   * replaced whole. @param {string[]} before @param {string[]} after @param {number} at
   */
  run (before, after, at) {
    const oldText = before.join('')
    const newText = after.join('')
    if (oldText.length + newText.length <= MAX_DIFF_UNITS || before.length !== after.length) {
      this.chars(oldText, newText, at)
      return
    }
    for (let n = 0; n < before.length; n++) {
      this.chars(before[n], after[n], at)
      at += before[n].length
    }
  }

  /** @param {string} before @param {string} after @param {number} at where `before` starts */
  chars (before, after, at) {
    if (before === after) return
    if (before.length + after.length > MAX_DIFF_UNITS || this.budget <= 0) {
      this.#replace(before, after, at)
      return
    }
    for (const [op, text] of this.#diff(before, after)) {
      if (op === diff.INSERT) this.#push(at, 0, text)
      else if (op === diff.DELETE) this.#push(at, text.length, '')
      if (op !== diff.INSERT) at += text.length
    }
  }

  /** @param {string} before @param {string} after */
  #diff (before, after) {
    const ops = diff(before, after)
    let changed = 0
    for (const [op, text] of ops) if (op !== diff.EQUAL) changed += text.length
    this.budget -= (before.length + after.length) * changed
    return ops
  }

  /**
   * One edit between the common start and end, neither cutting a surrogate pair in two.
   * @param {string} before @param {string} after @param {number} at
   */
  #replace (before, after, at) {
    let start = 0
    while (start < before.length && start < after.length && before[start] === after[start]) start++
    if (start > 0 && isHighSurrogate(before.charCodeAt(start - 1))) start--
    let end = 0
    while (end < before.length - start && end < after.length - start &&
      before[before.length - 1 - end] === after[after.length - 1 - end]) end++
    if (end > 0 && isLowSurrogate(before.charCodeAt(before.length - end))) end--
    this.#push(at + start, before.length - start - end, after.slice(start, after.length - end))
  }

  /** Joins an edit to the one it follows on from. @param {number} at @param {number} length @param {string} insert */
  #push (at, length, insert) {
    if (length === 0 && insert === '') return
    const last = this.list.at(-1)
    if (last && last.at + last.delete === at) {
      last.delete += length
      last.insert += insert
    } else {
      this.list.push({ at, delete: length, insert })
    }
  }
}

/**
 * Pairs of positions of lines whose content (without indentation) is found exactly once in each,
 * the longest run of them in the same order in both.
 * @param {string[]} old @param {string[]} now @returns {[number, number][]}
 */
function uniqueAnchors (old, now) {
  /** @type {Map<string, { inOld: number, oldAt: number, inNow: number, nowAt: number }>} */
  const seen = new Map()
  old.forEach((line, oldAt) => {
    const key = line.trim()
    const entry = seen.get(key)
    if (entry) entry.inOld++
    else seen.set(key, { inOld: 1, oldAt, inNow: 0, nowAt: -1 })
  })
  now.forEach((line, nowAt) => {
    const entry = seen.get(line.trim())
    if (entry) {
      entry.inNow++
      entry.nowAt = nowAt
    }
  })
  // A Map keeps the order of first sight, so these come in the old text's order.
  /** @type {[number, number][]} */
  const pairs = []
  for (const { inOld, oldAt, inNow, nowAt } of seen.values()) if (inOld === 1 && inNow === 1) pairs.push([oldAt, nowAt])
  return longestIncreasing(pairs)
}

/**
 * The longest subsequence of `pairs` whose second positions increase too (patience sorting).
 * @param {[number, number][]} pairs @returns {[number, number][]}
 */
function longestIncreasing (pairs) {
  /** @type {number[]} for each length, the pair ending the run of that length with the lowest end */
  const ends = []
  const previous = new Int32Array(pairs.length)
  pairs.forEach(([, nowAt], k) => {
    let low = 0
    let high = ends.length
    while (low < high) {
      const middle = (low + high) >> 1
      if (pairs[ends[middle]][1] < nowAt) low = middle + 1
      else high = middle
    }
    previous[k] = low > 0 ? ends[low - 1] : -1
    ends[low] = k
  })
  /** @type {[number, number][]} */
  const run = []
  for (let k = ends.length > 0 ? ends[ends.length - 1] : -1; k !== -1; k = previous[k]) run.push(pairs[k])
  return run.reverse()
}

/** @param {number} code */
export const isHighSurrogate = code => code >= 0xd800 && code <= 0xdbff
/** @param {number} code */
export const isLowSurrogate = code => code >= 0xdc00 && code <= 0xdfff
