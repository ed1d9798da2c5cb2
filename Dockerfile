# syntax=docker/dockerfile:1
# The Node version is pinned to the `node` devDependency of package.json (scripts/verify-image-steps.sh checks they agree).
# Build: full dependencies, compile TypeScript to dist/ and the console to dist/public/console.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY console ./console
RUN npm run build

# Runtime: production dependencies and dist/ only. The same image runs the api (default),
# the worker (node dist/worker.js), migrations (node dist/migrate.js) and the CLI (node dist/cli.js).
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
# A fixed heap budget: V8 otherwise sizes the heap from the host's memory and lets RSS grow to
# hundreds of MB before collecting. Raise it for large payloads or a high WORKER_CONCURRENCY.
# The young generation is set explicitly: from a 128 MB old space V8 derives semi-spaces of about
# 1 MB, and scavenges then cost the api ~10x the CPU per request (measured: BENCHMARKS.md, "Heap flags").
ENV NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=16"
# Two malloc arenas, not one per thread: native memory (sockets, TLS, zlib) stays in fewer, fuller arenas,
# which lowers the worker's peak RSS with many open connections (docs/running.md, "Memory").
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# `npm run cli` / `npm run migration:run` call ensure-build, which is a no-op without src/.
COPY scripts/ensure-build.mjs ./scripts/
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
