/**
 * One info line per HTTP request, written when the response is finished; `req.log` carries the
 * request's method and path for handlers that log more.
 * @param {import('pino').Logger} logger
 * @returns {import('express').RequestHandler}
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
