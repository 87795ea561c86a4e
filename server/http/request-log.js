/**
 * One line per finished request; `req.log` carries method and path for handlers.
 * @param {import('pino').Logger} logger @returns {import('express').RequestHandler}
 */
export function requestLog (logger) {
  return (req, res, next) => {
    const started = performance.now()
    req.log = logger.child({ method: req.method, path: req.path })
    res.on('finish', () => {
      req.log.info({ status: res.statusCode, ms: Math.round((performance.now() - started) * 10) / 10 }, 'request')
    })
    next()
  }
}
