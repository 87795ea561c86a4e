import http from 'node:http'
import net from 'node:net'

/**
 * A reverse proxy on another loopback port that sends `Host: <upstream>` on, as nginx's
 * `proxy_pass` does unless told `proxy_set_header Host $host`: the server then takes pages served
 * through it for another origin. HTTP and WebSocket upgrades alike. Resolves with its URL and `close`.
 * @param {string} upstreamUrl
 */
export async function hostRewritingProxy (upstreamUrl) {
  const upstream = new URL(upstreamUrl)
  /** @type {Set<import('node:net').Socket>} */
  const tunnels = new Set()
  const server = http.createServer((req, res) => {
    const forwarded = http.request(upstream, { method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forwarded.on('error', () => res.destroy())
    req.pipe(forwarded)
  })
  server.on('upgrade', (req, client, head) => {
    const socket = net.connect(Number(upstream.port), upstream.hostname)
    const headers = Object.entries({ ...req.headers, host: upstream.host }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
    socket.write(`${req.method} ${req.url} HTTP/1.1\r\n${headers}\r\n`)
    socket.write(head)
    for (const end of [socket, client]) {
      tunnels.add(/** @type {import('node:net').Socket} */ (end))
      end.on('error', () => { socket.destroy(); client.destroy() })
      end.on('close', () => tunnels.delete(/** @type {import('node:net').Socket} */ (end)))
    }
    socket.pipe(client).pipe(socket)
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    url: `http://127.0.0.1:${port}`,
    close () {
      for (const socket of tunnels) socket.destroy()
      server.closeAllConnections()
      return new Promise(resolve => server.close(() => resolve(undefined)))
    }
  }
}
