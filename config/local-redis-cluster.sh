#!/usr/bin/env bash
# A local Redis Cluster to try the gateway on: 3 masters and 3 replicas on 127.0.0.1, ports
# BASE_PORT to BASE_PORT+5 (cluster bus: each port + 10000), made by `redis-cli --cluster
# create`. Nothing is saved: `stop` ends the nodes by their PIDs and removes every file.
#
#   config/local-redis-cluster.sh start  [BASE_PORT]  starts it; prints the gateway YAML on stdout
#   config/local-redis-cluster.sh status [BASE_PORT]  each node's role and cluster_state
#   config/local-redis-cluster.sh stop   [BASE_PORT]  stops the nodes, removes the data
#
# BASE_PORT is 7000 unless given. Data, logs and PID files live in $LOCAL_REDIS_DIR, by
# default ${TMPDIR:-/tmp}/accounts-gateway-redis-cluster-BASE_PORT. Needs redis-server and
# redis-cli (Debian/Ubuntu: apt-get install redis-server redis-tools; macOS: brew install redis).
set -euo pipefail

NAME=cluster
COMMAND=${1:-}
DEFAULT_BASE=7000
BASE=${2:-$DEFAULT_BASE}
# A node unreachable this long is failed over (Redis's default: 15 s). 5 s keeps a trial
# failover short without taking a busy laptop's pause for an outage.
NODE_TIMEOUT_MS=5000
PORTS=()
for i in 0 1 2 3 4 5; do PORTS+=($((BASE + i))); done

# shellcheck source=config/local-redis-common.sh
. "$(dirname "$0")/local-redis-common.sh"

write_configs() {
  local port
  for port in "${PORTS[@]}"; do
    node_config "$port" >"$DIR/$port/redis.conf"
    cat >>"$DIR/$port/redis.conf" <<EOF
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout $NODE_TIMEOUT_MS
EOF
  done
}

# Every node says cluster_state:ok, and three replicas have their master link up.
settled() {
  local port linked=0
  for port in "${PORTS[@]}"; do
    redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    [ "$(redis-cli -p "$port" role 2>/dev/null | sed -n 4p)" = connected ] && linked=$((linked + 1))
  done
  [ "$linked" -eq 3 ]
}

start() {
  prepare "${PORTS[@]}" $(for port in "${PORTS[@]}"; do echo $((port + 10000)); done)
  write_configs
  start_nodes "${PORTS[@]}"
  local addresses=()
  for port in "${PORTS[@]}"; do addresses+=("127.0.0.1:$port"); done
  if ! redis-cli --cluster create "${addresses[@]}" --cluster-replicas 1 --cluster-yes \
    >"$DIR/create.log" 2>&1; then
    die "redis-cli --cluster create failed: $(cat "$DIR/create.log")"
  fi
  wait_for "every node to say cluster_state:ok with 3 replicas attached" settled
  echo "local-redis-$NAME: 3 masters and 3 replicas on 127.0.0.1:${PORTS[0]}-${PORTS[5]} (data in $DIR)" >&2
  cat <<EOF
# A gateway on the local Redis Cluster (stop it with: config/local-redis-cluster.sh stop $BASE)
credentials:
  store: redis
  redis:
    mode: cluster
    nodes:
EOF
  for port in "${PORTS[@]}"; do echo "      - 127.0.0.1:$port"; done
}

status() {
  local port up=0
  for port in "${PORTS[@]}"; do
    if alive "$port"; then
      up=$((up + 1))
      echo "127.0.0.1:$port pid $(cat "$DIR/$port/redis.pid") $(role "$port")" \
        "$(redis-cli -p "$port" cluster info | grep '^cluster_state:' | tr -d '\r')"
    else
      echo "127.0.0.1:$port down"
    fi
  done
  [ "$up" -eq "${#PORTS[@]}" ]
}

main "$@"
