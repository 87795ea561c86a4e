/** The notice's key: one line, however many attempts fail. */
const KEY = 'connection'

/**
 * Says on the page why the provider cannot connect, until it does. A handshake the server refused
 * carries its reason (`err.data`, e.g. an origin CORS_ORIGIN does not allow); a transport error
 * only its kind, since a browser hides why a WebSocket failed.
 * @param {import('../provider.js').SocketIOProvider} provider
 * @param {ReturnType<typeof import('./notices.js').notices>} messages
 */
export function showConnectionErrors (provider, messages) {
  provider.on('connection-error', (error) => {
    const refusal = /** @type {{ data?: { code?: string, message?: string } }} */ (error).data
    const reason = refusal?.code ? `${refusal.message} (${refusal.code})` : error.message
    messages.show(KEY, `Cannot connect: ${reason}${provider.status === 'connecting' ? '; retrying.' : '.'}`)
  })
  provider.on('status', ({ status }) => {
    if (status === 'connected') messages.clear(KEY)
  })
}
