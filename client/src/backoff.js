/**
 * How long to wait before retry number `attempt` (0 for the first): doubles from `minMs` up to
 * `maxMs`, and draws the actual delay from the upper half of that, so that editors refused at the
 * same moment (a full room, a storage outage) do not all come back at the same moment.
 * @param {number} attempt
 * @param {{ minMs: number, maxMs: number }} bounds
 * @returns {number} milliseconds
 */
export function backoffDelay (attempt, { minMs, maxMs }) {
  const ceiling = Math.min(maxMs, minMs * 2 ** attempt)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}
