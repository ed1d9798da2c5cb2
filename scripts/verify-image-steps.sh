#!/usr/bin/env bash
# Proves the Dockerfile's steps without a Docker engine. In a temp copy of the work tree:
#   build stage:   npm ci, npm run build
#   runtime stage: package.json + lock + dist only, npm ci --omit=dev, NODE_ENV=production
# then starts the api (worker off) and a separate worker against a fresh database, provisions a
# workspace with the CLI and makes one authenticated request. Prints PASS or FAIL naming the step.
set -euo pipefail

repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
pg_base=${IMGCHECK_PG_URL:-postgres://postgres@127.0.0.1:5432}
redis_url=${IMGCHECK_REDIS_URL:-redis://127.0.0.1:6379}
suffix=$(node -e 'console.log(require("crypto").randomBytes(6).toString("hex"))')
db=cw_imgcheck_$suffix
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cw-imgcheck.XXXXXX")
build=$tmp/build
runtime=$tmp/runtime
api_pid=
worker_pid=
current=setup

say() { printf '[image-steps] %s\n' "$*"; }
fail() {
  say "FAIL at step \"$current\": $*"
  exit 1
}

show_logs() {
  for log in "$runtime"/api.log "$runtime"/worker.log; do
    [ -s "$log" ] || continue
    say "last lines of $(basename "$log"):"
    tail -n 30 "$log" | sed 's/^/    /'
  done
}

cleanup() {
  local rc=$?
  [ "$rc" -eq 0 ] || show_logs
  for pid in $api_pid $worker_pid; do kill "$pid" 2>/dev/null || true; done
  for pid in $api_pid $worker_pid; do wait "$pid" 2>/dev/null || true; done
  psql "$pg_base/postgres" -qAtc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
    say "warning: could not drop database $db"
  rm -rf "$tmp"
  if [ "$rc" -eq 0 ]; then say "PASS"; else say "FAIL (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT

# Prints the HTTP status of a GET (000 when nothing answers); $2 is an optional API key.
http_status() {
  node -e '
    const [url, key] = process.argv.slice(1);
    fetch(url, { headers: key ? { "x-ac-api-key": key } : {}, signal: AbortSignal.timeout(5000) })
      .then((r) => console.log(r.status), () => console.log("000"));
  ' "$1" "${2:-}"
}

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

current="the image's Node"
# The image runs node:<version> (Dockerfile); both stages run here on that same version, which must be
# the one the project's scripts use (the `node` devDependency), so the two cannot drift apart.
image_node=$(sed -n 's/^FROM node:\([0-9][0-9.]*\)-.*/\1/p' "$repo/Dockerfile" | sort -u)
[ "$(printf '%s\n' "$image_node" | wc -l)" -eq 1 ] && [ -n "$image_node" ] || fail "the Dockerfile's stages must use one pinned node:<x.y.z> image"
dev_node=$(node -p 'require(process.argv[1]).devDependencies.node' "$repo/package.json")
[ "$image_node" = "$dev_node" ] || fail "Dockerfile runs node $image_node but package.json pins node $dev_node"
say "installing node $image_node"
npm install --prefix "$tmp/node" --no-save --no-audit --no-fund --loglevel=error "node@$image_node" >/dev/null ||
  fail "could not install node $image_node"
export PATH="$tmp/node/node_modules/.bin:$PATH"
[ "$(node --version)" = "v$image_node" ] || fail "node --version is $(node --version), not v$image_node"

current="copy the work tree"
say "$current into $tmp"
mkdir -p "$build" "$runtime"
# Tracked and untracked-but-not-ignored files as they are on disk (what `docker build .` would see).
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done |
  xargs -0 cp --parents -t "$build")

current="build stage: npm ci"
say "$current"
(cd "$build" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci failed"

current="build stage: npm run build"
say "$current"
(cd "$build" && npm run build) || fail "build failed"
[ -f "$build/dist/main.js" ] || fail "dist/main.js was not built"
[ -f "$build/dist/public/console/index.html" ] || fail "the console (dist/public/console) was not built"

current="runtime stage: npm ci --omit=dev"
say "$current"
cp "$build/package.json" "$build/package-lock.json" "$runtime/"
mkdir -p "$runtime/scripts"
cp "$build/scripts/ensure-build.mjs" "$runtime/scripts/"
(cd "$runtime" && NODE_ENV=production npm ci --omit=dev --no-audit --no-fund --loglevel=error) ||
  fail "npm ci --omit=dev failed"
cp -R "$build/dist" "$runtime/dist"
[ -f "$runtime/dist/main.js" ] || fail "dist/main.js missing from the runtime stage"
for dev_only in jest @nestjs/cli; do
  [ ! -d "$runtime/node_modules/$dev_only" ] || fail "dev dependency $dev_only was installed in the runtime stage"
done

port=$(free_port)
export NODE_ENV=production
# The image's heap budget, read from the Dockerfile so the check runs what the image runs.
NODE_OPTIONS=$(sed -n 's/^ENV NODE_OPTIONS="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$repo/Dockerfile")
[ -n "$NODE_OPTIONS" ] || fail "the Dockerfile sets no NODE_OPTIONS"
export NODE_OPTIONS
MALLOC_ARENA_MAX=$(sed -n 's/^ENV MALLOC_ARENA_MAX=\([0-9]*\)$/\1/p' "$repo/Dockerfile")
[ -n "$MALLOC_ARENA_MAX" ] || fail "the Dockerfile sets no MALLOC_ARENA_MAX"
export MALLOC_ARENA_MAX
export DATABASE_URL=$pg_base/$db
export REDIS_URL=$redis_url
export QUEUE_PREFIX=imgcheck-$suffix
export LOG_LEVEL=info
export METRICS_PORT=0 # each process's /metrics port could be taken on a shared machine
cd "$runtime"

current="start the api (node dist/main.js, worker off)"
say "$current on port $port, database $db"
PORT=$port WORKER_ENABLED=false node dist/main.js >api.log 2>&1 &
api_pid=$!

current="wait for the api to be ready"
say "$current (up to 60 s)"
base=http://127.0.0.1:$port
ready=
for _ in $(seq 120); do
  alive "$api_pid" || fail "the api exited before it was ready"
  readyz=$(http_status "$base/readyz")
  case "$readyz" in
    200) ready="/readyz 200" ;;
    000 | 503) ;; # not listening yet, or Postgres/Redis not reachable yet
    # No working /readyz (yet): an unauthenticated request that gets 401 shows the API is serving.
    *) [ "$(http_status "$base/api/v1/me")" != 401 ] || ready="/api/v1/me 401 (/readyz answered $readyz)" ;;
  esac
  [ -z "$ready" ] || break
  sleep 0.5
done
[ -n "$ready" ] || fail "not ready within 60 s"
say "ready: $ready"

# Started once the api has migrated the database, as compose starts workers after `migrate`.
# With tracing on, so the OpenTelemetry SDK must load from production dependencies; its exports to a
# closed port fail quietly, as they do while a collector is away.
current="start the worker (node dist/worker.js, tracing on)"
say "$current"
[ -f dist/worker.js ] || fail "dist/worker.js does not exist (src/worker.ts not written yet?)"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9 node dist/worker.js >worker.log 2>&1 &
worker_pid=$!
worker_started=$SECONDS

current="provision a workspace (node dist/cli.js workspace:create --name img --json)"
say "$current"
[ -f dist/cli.js ] || fail "dist/cli.js does not exist (src/cli.ts not written yet?)"
cli_out=$(node dist/cli.js workspace:create --name img --json) || fail "the CLI failed: $cli_out"
key=$(printf '%s' "$cli_out" | node -e '
  const text = require("fs").readFileSync(0, "utf8");
  const { apiKey } = JSON.parse(text); // --json prints exactly one JSON object
  if (typeof apiKey !== "string") process.exit(1);
  console.log(apiKey);
') || fail "no apiKey in the CLI's JSON output: $cli_out"

current="authenticated GET /api/v1/me"
say "$current"
status=$(http_status "$base/api/v1/me" "$key")
[ "$status" = 200 ] || fail "expected 200, got $status"

current="the console is served (GET /console/)"
say "$current"
status=$(http_status "$base/console/")
[ "$status" = 200 ] || fail "expected 200, got $status"

current="the worker keeps running"
say "$current"
while [ $((SECONDS - worker_started)) -lt 3 ]; do sleep 0.5; done
alive "$worker_pid" || fail "the worker exited"
say "api, worker, migrations and CLI all ran from production dependencies"
