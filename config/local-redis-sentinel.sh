#!/usr/bin/env bash
# A local Redis Sentinel set to try the gateway on, on 127.0.0.1: a master on BASE_PORT, its
# replica on BASE_PORT+1, and 3 sentinels (quorum 2) on BASE_PORT+2 to BASE_PORT+4 watching
# it as `mymaster`. Nothing is saved: `stop` ends them by their PIDs and removes every file.
#
#   config/local-redis-sentinel.sh start  [BASE_PORT]  starts it; prints the gateway YAML on stdout
#   config/local-redis-sentinel.sh status [BASE_PORT]  each process's role; the master the sentinels name
#   config/local-redis-sentinel.sh stop   [BASE_PORT]  stops them, removes the data
#
# BASE_PORT is 7010 unless given. Data, logs and PID files live in $LOCAL_REDIS_DIR, by
# default ${TMPDIR:-/tmp}/accounts-gateway-redis-sentinel-BASE_PORT. Needs redis-server,
# redis-sentinel and redis-cli (Debian/Ubuntu: apt-get install redis-server redis-sentinel
# redis-tools; macOS: brew install redis).
set -euo pipefail

NAME=sentinel
COMMAND=${1:-}
DEFAULT_BASE=7010
BASE=${2:-$DEFAULT_BASE}
MASTER_NAME=mymaster
# A master silent this long is down for a sentinel (Redis's default: 30 s); see the Cluster
# script's node timeout.
DOWN_AFTER_MS=5000
MASTER=$BASE
REPLICA=$((BASE + 1))
SENTINELS="$((BASE + 2)) $((BASE + 3)) $((BASE + 4))"
# shellcheck disable=SC2206 # the sentinels' ports, split on purpose
PORTS=("$MASTER" "$REPLICA" $SENTINELS)

# shellcheck source=config/local-redis-common.sh
. "$(dirname "$0")/local-redis-common.sh"

# One field of `SENTINEL MASTER mymaster` on the sentinel at $1.
master_field() {
  redis-cli -p "$1" sentinel master "$MASTER_NAME" 2>/dev/null | awk -v name="$2" 'seen { print; exit } $0 == name { seen = 1 }'
}

# The replica's master link is up.
attached() { [ "$(redis-cli -p "$REPLICA" role 2>/dev/null | sed -n 4p)" = connected ]; }

# Every sentinel knows the replica and the two other sentinels.
acquainted() {
  local port
  for port in $SENTINELS; do
    [ "$(master_field "$port" num-slaves)" = 1 ] || return 1
    [ "$(master_field "$port" num-other-sentinels)" = 2 ] || return 1
  done
}

start() {
  prepare "${PORTS[@]}"
  node_config "$MASTER" >"$DIR/$MASTER/redis.conf"
  { node_config "$REPLICA"; echo "replicaof 127.0.0.1 $MASTER"; } >"$DIR/$REPLICA/redis.conf"
  local port
  for port in $SENTINELS; do
    # A sentinel rewrites this file with what it learns (replicas, other sentinels).
    {
      process_config "$port"
      cat <<EOF
sentinel monitor $MASTER_NAME 127.0.0.1 $MASTER 2
sentinel down-after-milliseconds $MASTER_NAME $DOWN_AFTER_MS
sentinel failover-timeout $MASTER_NAME 10000
EOF
    } >"$DIR/$port/redis.conf"
  done
  start_nodes "$MASTER" "$REPLICA"
  wait_for "the replica on $REPLICA to attach to $MASTER" attached
  # shellcheck disable=SC2086 # the sentinels' ports, split on purpose
  start_nodes $SENTINELS
  wait_for "every sentinel to know the replica and the other sentinels" acquainted
  echo "local-redis-$NAME: master 127.0.0.1:$MASTER, replica 127.0.0.1:$REPLICA, sentinels on ${SENTINELS// /, } (data in $DIR)" >&2
  cat <<EOF
# A gateway on the local Redis Sentinel set (stop it with: config/local-redis-sentinel.sh stop $BASE)
credentials:
  store: redis
  redis:
    mode: sentinel
    sentinelName: $MASTER_NAME
    nodes:
EOF
  for port in $SENTINELS; do echo "      - 127.0.0.1:$port"; done
}

status() {
  local port up=0
  for port in "${PORTS[@]}"; do
    if ! alive "$port"; then
      echo "127.0.0.1:$port down"
      continue
    fi
    up=$((up + 1))
    if [[ " $SENTINELS " == *" $port "* ]]; then
      echo "127.0.0.1:$port pid $(cat "$DIR/$port/redis.pid") sentinel; master" \
        "$(redis-cli -p "$port" sentinel get-master-addr-by-name "$MASTER_NAME" | paste -sd: -)"
    else
      echo "127.0.0.1:$port pid $(cat "$DIR/$port/redis.pid") $(role "$port")"
    fi
  done
  [ "$up" -eq "${#PORTS[@]}" ]
}

main "$@"
