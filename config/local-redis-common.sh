# What config/local-redis-cluster.sh and config/local-redis-sentinel.sh share; sourced by
# them after they set NAME, COMMAND, DEFAULT_BASE, BASE and PORTS (every port a process of
# theirs serves), and SENTINELS (the ports among them that run redis-sentinel) if any. Each
# defines start and status; main runs the command.

DIR=${LOCAL_REDIS_DIR:-${TMPDIR:-/tmp}/accounts-gateway-redis-$NAME-$BASE}
SCRIPT="config/local-redis-$NAME.sh"

usage() {
  echo "usage: $SCRIPT start|status|stop [BASE_PORT]  (BASE_PORT: $DEFAULT_BASE unless given)" >&2
  exit 2
}

die() {
  printf 'local-redis-%s: %s\n' "$NAME" "$@" >&2
  exit 1
}

need() {
  local command
  for command in "$@"; do
    command -v "$command" >/dev/null 2>&1 ||
      die "$command not found (Debian/Ubuntu: apt-get install redis-server redis-sentinel redis-tools; macOS: brew install redis)"
  done
}

# A data node's role as Redis's ROLE names it, but `replica` where Redis still says `slave`.
role() { redis-cli -p "$1" role | head -1 | sed 's/^slave$/replica/'; }

port_taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Refuses a second start on the same data directory or on a taken port; then makes a
# directory per process, and until start ends well, whatever it started is stopped if it
# stops on an error.
prepare() {
  [[ $BASE =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 55000 ] ||
    { echo "local-redis-$NAME: BASE_PORT must be a number from 1024 to 55000" >&2; exit 2; }
  [ ! -e "$DIR" ] || die "$DIR exists: already started? ($SCRIPT status $BASE; $SCRIPT stop $BASE)"
  local port taken=""
  for port in "$@"; do port_taken "$port" && taken="$taken $port"; done
  [ -z "$taken" ] || die "port(s)$taken already in use on 127.0.0.1; pick another BASE_PORT"
  trap 'stop_all >/dev/null 2>&1' EXIT
  for port in "${PORTS[@]}"; do mkdir -p "$DIR/$port"; done
}

# The config every process here starts from: loopback only, in the background with its PID
# in a file (what `stop` ends).
process_config() {
  cat <<EOF
port $1
bind 127.0.0.1
daemonize yes
pidfile "$DIR/$1/redis.pid"
logfile "$DIR/$1/redis.log"
dir "$DIR/$1"
EOF
}

# A data node's: nothing saved, replicas synced at once (not after Redis 7's 5 s batching).
node_config() {
  process_config "$1"
  printf '%s\n' 'save ""' 'appendonly no' 'repl-diskless-sync-delay 0'
}

# Runs "$@" every 0.1 s until it succeeds, for at most 60 s.
wait_for() {
  local what=$1 tries=0
  shift
  until "$@"; do
    tries=$((tries + 1))
    [ "$tries" -lt 600 ] || die "gave up waiting for $what (logs in $DIR)"
    sleep 0.1
  done
}

alive() {
  local pid
  [ -f "$DIR/$1/redis.pid" ] && pid=$(cat "$DIR/$1/redis.pid") && kill -0 "$pid" 2>/dev/null
}

answers() {
  local port
  for port in "$@"; do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] || return 1
  done
}

# Starts each port's process from its redis.conf (redis-sentinel for the ports in SENTINELS).
start_nodes() {
  local port
  for port in "$@"; do
    if [[ " ${SENTINELS:-} " == *" $port "* ]]; then
      redis-sentinel "$DIR/$port/redis.conf" >/dev/null || die "redis-sentinel on $port did not start"
    else
      redis-server "$DIR/$port/redis.conf" >/dev/null || die "redis-server on $port did not start"
    fi
  done
  wait_for "ports $* to answer PING" answers "$@"
}

# Ends every process by the PID in its file (only a redis process: a PID may have been
# reused since), waits until each is gone, and removes the data directory.
stop_all() {
  local file pid pids=()
  for file in "$DIR"/*/redis.pid; do
    [ -f "$file" ] || continue
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null && [[ $(ps -o comm= -p "$pid") == redis* ]]; then
      kill "$pid"
      pids+=("$pid")
    fi
  done
  local tries=0
  for pid in ${pids[@]+"${pids[@]}"}; do
    while kill -0 "$pid" 2>/dev/null; do
      tries=$((tries + 1))
      # Nothing is saved: a node that has not exited after 10 s is killed outright.
      [ "$tries" -lt 100 ] || kill -KILL "$pid" 2>/dev/null || true
      sleep 0.1
    done
  done
  rm -rf "$DIR"
}

main() {
  case "$COMMAND" in
    start)
      need redis-server redis-cli ${SENTINELS:+redis-sentinel}
      start
      trap - EXIT
      ;;
    status)
      [ -d "$DIR" ] || { echo "local-redis-$NAME: not started (no $DIR)" >&2; exit 1; }
      status
      ;;
    stop)
      [ -d "$DIR" ] || { echo "local-redis-$NAME: not started (no $DIR)" >&2; exit 0; }
      stop_all
      echo "local-redis-$NAME: stopped; removed $DIR" >&2
      ;;
    *) usage ;;
  esac
}
