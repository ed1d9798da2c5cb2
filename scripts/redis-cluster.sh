#!/usr/bin/env bash
# A real 6-node Redis Cluster (3 masters, 3 replicas) on loopback ports, for the cluster tests and the
# bench: `start` (idempotent), `stop`, `status`, `node PORT` (starts one node again after a kill: it
# rejoins, as a replica once its master role was failed over). Ports REDIS_CLUSTER_PORT..+5 (default 7100).
# No persistence, as the single Redis the tests use; each node's files under $REDIS_CLUSTER_DIR.
set -euo pipefail
BASE=${REDIS_CLUSTER_PORT:-7100}
# Per user: a folder left by another user's run must not stop this one.
DIR=${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/cw-redis-cluster-$(id -u)}
PORTS=$(seq "$BASE" $((BASE + 5)))

healthy() {
  [ "$(redis-cli -p "$BASE" cluster info 2>/dev/null | tr -d '\r' | grep -c '^cluster_state:ok$')" = 1 ] &&
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -v fail | grep -c master)" -ge 3 ] &&
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -v fail | grep -c slave)" -ge 3 ]
}

answers() { [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; }

# What went wrong, on stderr: the create output and the end of each node's log.
explain() {
  echo "Redis Cluster did not start: $1 (files under $DIR)" >&2
  [ -f "$DIR/create.log" ] && sed 's/\x1b\[[0-9;]*m//g' "$DIR/create.log" | tail -n 15 >&2
  for port in $PORTS; do
    [ -f "$DIR/$port/redis.log" ] && { echo "--- node $port" >&2; tail -n 5 "$DIR/$port/redis.log" >&2; }
  done
  return 1
}

# A node that answers must be new: knows no other node and holds no key (a half-built earlier try).
fresh() {
  for port in $PORTS; do
    if [ "$(redis-cli -p "$port" cluster info | tr -d '\r' | grep -c '^cluster_known_nodes:1$')" != 1 ] ||
      [ "$(redis-cli -p "$port" dbsize | tr -d '\r')" != 0 ]; then
      redis-cli -p "$port" flushall >/dev/null 2>&1 || true
      redis-cli -p "$port" cluster reset hard >/dev/null
    fi
  done
}

create() {
  # shellcheck disable=SC2046
  redis-cli --cluster create $(for port in $PORTS; do printf '127.0.0.1:%s ' "$port"; done) \
    --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1
}

start() {
  if healthy; then
    echo "Redis Cluster already running on 127.0.0.1:$BASE-$((BASE + 5))"
    return
  fi
  command -v redis-server >/dev/null || { echo "redis-server is not installed" >&2; exit 1; }
  stop
  for port in $PORTS; do
    mkdir -p "$DIR/$port"
    rm -f "$DIR/$port/nodes.conf" "$DIR/$port/redis.log"
    node "$port"
  done
  for port in $PORTS; do
    for _ in $(seq 50); do answers "$port" && break; sleep 0.1; done
    answers "$port" || explain "node $port does not answer"
  done
  local tries=0
  until fresh && create; do
    tries=$((tries + 1))
    [ "$tries" -lt 3 ] || explain "redis-cli --cluster create failed $tries times"
    sleep 1
  done
  for _ in $(seq 100); do healthy && break; sleep 0.2; done
  healthy || explain "the cluster did not report ok within 20 s"
  echo "Redis Cluster ready on 127.0.0.1:$BASE-$((BASE + 5))"
}

node() {
  redis-server --port "$1" --bind 127.0.0.1 --daemonize yes --cluster-enabled yes \
    --cluster-config-file "$DIR/$1/nodes.conf" --cluster-node-timeout 2000 --dir "$DIR/$1" \
    --pidfile "$DIR/$1/redis.pid" --save "" --appendonly no --maxmemory-policy noeviction \
    --logfile "$DIR/$1/redis.log"
}

# Stops every node and waits until none answers; a node that will not shut down is killed.
stop() {
  for port in $PORTS; do redis-cli -p "$port" shutdown nosave now >/dev/null 2>&1 || true; done
  for port in $PORTS; do
    for _ in $(seq 50); do answers "$port" || break; sleep 0.1; done
    if answers "$port" && [ -f "$DIR/$port/redis.pid" ]; then kill -9 "$(cat "$DIR/$port/redis.pid")" 2>/dev/null || true; fi
    for _ in $(seq 20); do answers "$port" || break; sleep 0.1; done
    if answers "$port"; then
      echo "port $port is held by a Redis that will not stop" >&2
      return 1
    fi
  done
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) healthy && echo ok || { echo "not running"; exit 1; } ;;
  node) node "$2" ;;
  *) echo "usage: $0 start|stop|status|node PORT" >&2; exit 64 ;;
esac
