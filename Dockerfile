# Tandem as a PM2 cluster under pm2-runtime, on Node 26 (the current LTS, which CI tests). Every worker needs REDIS_URL (documents, sessions and
# broadcasts live in Redis); docker-compose.yml wires one up. Build: docker build -t tandem .

# The build stage installs everything, bundles the page, then drops the dev dependencies, so the
# runtime stage copies the built page and production dependencies only: the page's toolchain
# (esbuild, monaco-editor, the CodeMirror packages) is dev-only, as are the tests' and the load test's.
# client/package.json comes first because it is a workspace, which npm ci installs too.
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json client/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

# Debian rather than Alpine: classic-level ships prebuilt binaries for glibc.
FROM node:26-bookworm-slim
# Production refuses to start without AUTH_SECRET, API_KEY and METRICS_TOKEN (or METRICS_PUBLIC=true
# when a network rule guards /metrics): pass them at run time, never bake them into the image.
ENV NODE_ENV=production
# Every interface of the container, so that `-p 3000:3000` reaches it: without AUTH_SECRET the server
# would otherwise bind 127.0.0.1, where the health check passes and nothing from outside gets in.
ENV HOST=0.0.0.0
# pm2-runtime and the other binaries of the app's dependencies.
ENV PATH=/app/node_modules/.bin:$PATH
# jemalloc instead of glibc's malloc, for PM2 and every worker: glibc keeps in its arenas what a busy
# hour allocated and freed (after 300 editors left, about 12 MB of RSS that malloc_trim(0) hands
# back and the process never does), where jemalloc returns freed pages within seconds. The link
# gives LD_PRELOAD one path on amd64 and arm64.
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 \
  && ln -s "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" /usr/local/lib/libjemalloc.so.2 \
  && rm -rf /var/lib/apt/lists/*
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY --from=build --chown=node:node /app ./
# The image's unprivileged user; PM2 keeps its state in /home/node/.pm2.
USER node
EXPOSE 3000
# 503 while storage is unreachable or the workers are draining; node's fetch, as the image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health', { signal: AbortSignal.timeout(4000) }).then(res => process.exit(res.ok ? 0 : 1), () => process.exit(1))"]
# pm2 is a runtime dependency. Not `npx pm2-runtime`: npx runs it under `sh -c`, which dies on
# SIGTERM without passing it on, and the workers would be killed without draining. pm2-runtime
# itself stops each worker within kill_timeout (15 s): give `docker stop` more than that.
CMD ["pm2-runtime", "ecosystem.config.js"]
