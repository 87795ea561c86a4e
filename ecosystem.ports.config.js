// `npm run cluster:ports`: the same workers as ecosystem.config.js in PM2's fork mode, worker i
// listening on PORT + i (3000, 3001, …), so that nginx, hashing the session each connection names
// (deploy/nginx.conf), sends every editor of a session to the same worker (docs/CLUSTER.md,
// "Editors of a session on one process").

import { common } from './ecosystem.config.js'

export const apps = [{
  name: 'tandem-ports',
  ...common,
  exec_mode: 'fork',
  increment_var: 'PORT',
  env: { PORT: process.env.PORT ?? '3000' }
}]
