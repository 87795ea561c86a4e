import { LatencyRecorder, createHistogram, encode } from './histogram.js'

// What the editors of one worker thread measured. Counters cover the measured window only (sends
// made at or after the window's start; receipts of those sends), except the connect and join ones,
// which cover the level's connect phase.

export class EditorStats {
  connect = createHistogram()
  join = createHistogram()
  synced = createHistogram()
  scheduleLag = createHistogram()
  // Recorded once per update and per delivery: the cheap recorder.
  ack = new LatencyRecorder()
  broadcast = new LatencyRecorder()

  connectFailed = 0
  joinFailed = 0
  sent = 0
  acked = 0
  refused = 0
  timedOut = 0
  /** @type {Record<string, number>} refusals by error code */
  refusedByCode = {}
  broadcastReceived = 0
  awarenessSent = 0
  awarenessReceived = 0
  disconnects = 0
  closedByServer = 0

  /** @param {number} ms */
  recordAck (ms) {
    this.ack.record(ms)
  }

  /** @param {number} ms */
  recordBroadcast (ms) {
    this.broadcastReceived++
    this.broadcast.record(ms)
  }

  /** @param {string} code */
  recordRefusal (code) {
    this.refused++
    this.refusedByCode[code] = (this.refusedByCode[code] ?? 0) + 1
  }

  get errors () {
    return this.connectFailed + this.joinFailed + this.refused + this.timedOut + this.disconnects + this.closedByServer
  }

  /** Counters, and the latencies recorded since the last call, for the live progress line. */
  takeRecent () {
    return {
      sent: this.sent,
      acked: this.acked,
      errors: this.errors,
      ack: this.ack.takeRecent(),
      broadcast: this.broadcast.takeRecent()
    }
  }

  /** Everything, with histograms encoded for postMessage. */
  toMessage () {
    return {
      histograms: {
        connect: encode(this.connect),
        join: encode(this.join),
        synced: encode(this.synced),
        ack: encode(this.ack.histogram()),
        broadcast: encode(this.broadcast.histogram()),
        scheduleLag: encode(this.scheduleLag)
      },
      counts: {
        connectFailed: this.connectFailed,
        joinFailed: this.joinFailed,
        sent: this.sent,
        acked: this.acked,
        refused: this.refused,
        timedOut: this.timedOut,
        broadcastReceived: this.broadcastReceived,
        awarenessSent: this.awarenessSent,
        awarenessReceived: this.awarenessReceived,
        disconnects: this.disconnects,
        closedByServer: this.closedByServer
      },
      refusedByCode: { ...this.refusedByCode }
    }
  }
}

/** @typedef {ReturnType<EditorStats['toMessage']>} EditorStatsMessage */
/** @typedef {ReturnType<EditorStats['takeRecent']>} RecentStats */
