// Mints a join token for one person through the REST API and prints their invite link:
//   API_KEY=… TANDEM_URL=https://tandem.example npm run invite -- <session id> <user> <editor|viewer> [ttl seconds]
// The link carries the token in its fragment (`/s/<id>#token=…`), which browsers never send to a
// server, so it stays out of access logs. What a backend does for its users, by hand.

import { fileURLToPath } from 'node:url'

const USAGE = 'usage: npm run invite -- <session id> <user> <editor|viewer> [ttl seconds]\n' +
  'env: API_KEY (the server\'s), TANDEM_URL (default http://localhost:3000)'

/**
 * @param {string[]} args session, user, role and optionally ttl
 * @param {Record<string, string | undefined>} env
 * @returns {Promise<string>} the invite link
 */
export async function invite (args, env) {
  const [session, user, role, ttl] = args
  if (!session || !user || !['editor', 'viewer'].includes(role) || (ttl !== undefined && !/^\d+$/.test(ttl))) throw new Error(USAGE)
  if (!env.API_KEY) throw new Error(`API_KEY is not set\n${USAGE}`)
  const base = new URL(env.TANDEM_URL || 'http://localhost:3000')
  const res = await fetch(new URL(`/api/sessions/${encodeURIComponent(session)}/tokens`, base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.API_KEY}` },
    body: JSON.stringify({ user, role, ...(ttl === undefined ? {} : { ttl: Number(ttl) }) }),
    signal: AbortSignal.timeout(10_000)
  })
  const body = await res.json().catch(() => ({}))
  if (!res.ok) throw new Error(`${base.origin} refused: ${res.status} ${body.error?.code ?? ''} ${body.error?.message ?? ''}`.trim())
  return `${base.origin}/s/${encodeURIComponent(session)}#token=${body.token}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${await invite(process.argv.slice(2), process.env)}\n`)
  } catch (err) {
    process.stderr.write(`${/** @type {Error} */ (err).message}\n`)
    process.exitCode = 1
  }
}
