import { EventEmitter } from 'node:events'
import { Worker } from 'node:worker_threads'

const WORKER_ENTRY = new URL('./worker.js', import.meta.url)

/**
 * The load-generator threads of one level, with request/reply over postMessage. Emits `progress`
 * with each thread's periodic report; a thread that crashes fails every pending request.
 */
export class WorkerPool extends EventEmitter {
  #nextId = 0
  /** @type {Map<number, { resolve: (value: any) => void, reject: (err: Error) => void }>} */
  #pending = new Map()

  /**
   * @param {number} size
   * @param {(worker: number) => import('./worker.js').WorkerSetup} setupOf
   */
  constructor (size, setupOf) {
    super()
    this.workers = Array.from({ length: size }, (_, i) => {
      const worker = new Worker(WORKER_ENTRY, { workerData: setupOf(i) })
      worker.on('message', (message) => this.#onMessage(message))
      worker.on('error', (err) => this.#failAll(err))
      worker.on('exit', (code) => { if (code !== 0) this.#failAll(new Error(`load-generator thread ${i} exited with ${code}`)) })
      return worker
    })
  }

  /**
   * Sends a request to one thread and resolves with its reply.
   * @param {number} worker
   * @param {string} type
   * @param {object} [payload]
   */
  request (worker, type, payload = {}) {
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject })
      this.workers[worker].postMessage({ ...payload, id, type })
    })
  }

  /**
   * The same request to every thread; resolves with the replies in thread order.
   * @param {string} type
   * @param {object | ((worker: number) => object)} [payload]
   * @returns {Promise<any[]>}
   */
  all (type, payload = {}) {
    return Promise.all(this.workers.map((_, i) => this.request(i, type, typeof payload === 'function' ? payload(i) : payload)))
  }

  async terminate () {
    await Promise.all(this.workers.map(worker => worker.terminate()))
  }

  /** @param {any} message */
  #onMessage (message) {
    if (message.type === 'progress') {
      this.emit('progress', message)
      return
    }
    const pending = this.#pending.get(message.id)
    if (!pending) return
    this.#pending.delete(message.id)
    if (message.error) pending.reject(new Error(message.error))
    else pending.resolve(message.result)
  }

  /** @param {Error} err */
  #failAll (err) {
    for (const { reject } of this.#pending.values()) reject(err)
    this.#pending.clear()
  }
}
