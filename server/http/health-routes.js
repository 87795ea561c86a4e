import { readFileSync } from 'node:fs'
import { Router } from 'express'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))

/**
 * `GET /api/health`: liveness plus readiness. Load balancers route to a process only while `ready`;
 * it answers 503 while storage is down or the process is shutting down. `auth: "off"` says that
 * anyone may join and edit (development without AUTH_SECRET).
 * @param {{ storage: string, broadcast: string, auth: boolean, isReady: () => boolean }} deps
 */
export function healthRoutes ({ storage, broadcast, auth, isReady }) {
  const router = Router()
  router.get('/health', (req, res) => {
    const ready = isReady()
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ok' : 'unavailable',
      ready,
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
