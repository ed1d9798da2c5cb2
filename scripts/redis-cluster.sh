#!/usr/bin/env bash
# A real 6-node Redis Cluster (3 masters, 3 replicas) on loopback ports, for the cluster tests and the
# bench: `start` (idempotent), `stop`, `status`, `node PORT` (starts one node again after a kill: it
# rejoins, as a replica once its master role was failed over). Ports REDIS_CLUSTER_PORT..+5 (default 7100).
# No persistence, as the single Redis the tests use; each node's files under $REDIS_CLUSTER_DIR.
set -euo pipefail
BASE=${REDIS_CLUSTER_PORT:-7100}
DIR=${REDIS_CLUSTER_DIR:-/tmp/cw-redis-cluster}
PORTS=$(seq "$BASE" $((BASE + 5)))

healthy() {
  [ "$(redis-cli -p "$BASE" cluster info 2>/dev/null | tr -d '\r' | grep -c '^cluster_state:ok$')" = 1 ] &&
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -c master)" -ge 3 ] &&
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -c slave)" -ge 3 ]
}

start() {
  if healthy; then
    echo "Redis Cluster already running on 127.0.0.1:$BASE-$((BASE + 5))"
    return
  fi
  stop >/dev/null 2>&1 || true
  command -v redis-server >/dev/null || { echo "redis-server is not installed" >&2; exit 1; }
  for port in $PORTS; do
    mkdir -p "$DIR/$port"
    rm -f "$DIR/$port/nodes.conf"
    node "$port"
  done
  for port in $PORTS; do
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  # shellcheck disable=SC2046
  redis-cli --cluster create $(for port in $PORTS; do printf '127.0.0.1:%s ' "$port"; done) \
    --cluster-replicas 1 --cluster-yes >"$DIR/create.log"
  for _ in $(seq 100); do healthy && break; sleep 0.2; done
  healthy || { echo "Redis Cluster did not become healthy; see $DIR" >&2; exit 1; }
  echo "Redis Cluster ready on 127.0.0.1:$BASE-$((BASE + 5))"
}

node() {
  redis-server --port "$1" --bind 127.0.0.1 --daemonize yes --cluster-enabled yes \
    --cluster-config-file "$DIR/$1/nodes.conf" --cluster-node-timeout 2000 --dir "$DIR/$1" \
    --save "" --appendonly no --maxmemory-policy noeviction --logfile "$DIR/$1/redis.log"
}

stop() {
  for port in $PORTS; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; done
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) healthy && echo ok || { echo "not running"; exit 1; } ;;
  node) node "$2" ;;
  *) echo "usage: $0 start|stop|status|node PORT" >&2; exit 64 ;;
esac
