import { readFileSync } from 'node:fs'
import { Router } from 'express'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))

/**
 * `GET /api/health`: balancers route to a process only while `ready`; 503 while storage is down or
 * refuses writes (`degraded`, with its code) or the process stops. `auth: "off"`: anyone may edit.
 * @param {{ storage: string, broadcast: string, auth: boolean, isReady: () => boolean,
 *   storageError: () => import('../storage/storage-health.js').StorageError | null }} deps
 */
export function healthRoutes ({ storage, broadcast, auth, isReady, storageError }) {
  const router = Router()
  router.get('/health', (req, res) => {
    const ready = isReady()
    const error = storageError()
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ok' : error ? 'degraded' : 'unavailable',
      ready,
      ...(error ? { storageError: error.code } : {}),
      version,
      uptime: Math.round(process.uptime()),
      storage,
      broadcast,
      auth: auth ? 'on' : 'off',
      pid: process.pid
    })
  })
  return router
}
