import { recentP99Ms } from './histogram.js'

// What the live progress line shows while a level runs, from the threads' once-a-second reports.

/**
 * Merges the threads' progress reports into the live figures of the last second, and resolves
 * `allFinished` once every thread says its editors have nothing left to send (a trace ran out).
 * @param {import('./pool.js').WorkerPool} pool
 * @param {number} threads
 */
export function watchProgress (pool, threads) {
  /** @type {Map<number, import('./editor-stats.js').RecentStats & { finished: boolean }>} */
  const latest = new Map()
  /** @type {(value?: unknown) => void} */
  let finish = () => {}
  const allFinished = new Promise(resolve => { finish = resolve })
  pool.on('progress', ({ worker, recent, finished }) => {
    latest.set(worker, { ...recent, finished })
    if (latest.size === threads && [...latest.values()].every(report => report.finished)) finish()
  })
  return {
    allFinished,
    snapshot () {
      const reports = [...latest.values()]
      return {
        ackP99: recentP99Ms(reports.map(report => report.ack)),
        broadcastP99: recentP99Ms(reports.map(report => report.broadcast)),
        sent: reports.reduce((total, report) => total + report.sent, 0),
        errors: reports.reduce((total, report) => total + report.errors, 0)
      }
    }
  }
}
