import type { Logger } from 'pino'

declare global {
  namespace Express {
    interface Request {
      /** the request's child logger, set by request-log.js */
      log: Logger
    }
  }
}

export {}
