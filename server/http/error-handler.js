import { AppError, errorBody, statusOf } from '../errors.js'

/**
 * `{ error: { code, message } }` with its status; unexpected errors are logged and sent as INTERNAL.
 * @param {{ metrics: import('../metrics.js').Metrics }} deps @returns {import('express').ErrorRequestHandler}
 */
export function errorHandler ({ metrics }) {
  return (err, req, res, next) => {
    const error = fromBodyParser(err) ?? err
    if (!(error instanceof AppError)) req.log.error({ err }, 'request failed')
    else if (error.status >= 500) req.log.warn({ err: error.cause ?? error }, error.message)
    const body = errorBody(error)
    metrics.refusals.inc({ code: body.code, event: 'http' })
    if (res.headersSent) {
      next(err)
      return
    }
    res.status(statusOf(error)).json({ error: body })
  }
}

/** @param {any} err */
function fromBodyParser (err) {
  if (err?.type === 'entity.too.large') return new AppError('TOO_LARGE', `request body exceeds ${err.limit} bytes`)
  if (err?.type === 'entity.parse.failed') return new AppError('BAD_REQUEST', 'request body is not valid JSON')
  if (typeof err?.type === 'string' && err.status === 400) return new AppError('BAD_REQUEST', err.message)
  if (err?.type === 'encoding.unsupported' || err?.status === 415) return new AppError('BAD_REQUEST', 'unsupported body encoding')
  // A body that fails to decompress: zlib's error, marked 400 without a `type`.
  if (err?.status === 400 && err.expose === true) return new AppError('BAD_REQUEST', 'request body could not be read')
  // A path whose percent-escapes do not decode (`/api/sessions/%ZZ`): the router's URIError.
  if (err instanceof URIError) return new AppError('BAD_REQUEST', 'the request path does not decode')
  return undefined
}

/** @param {import('express').Request} req @param {import('express').Response} res @param {import('express').NextFunction} next */
export function notFound (req, res, next) {
  next(new AppError('NOT_FOUND', `no route ${req.method} ${req.path}`))
}
