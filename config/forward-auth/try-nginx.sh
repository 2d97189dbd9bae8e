#!/usr/bin/env bash
# Forward auth to try on one machine, nothing to assemble: nginx (with nginx.conf beside this
# file, inside a complete main config) asks the gateway about every request for a tiny
# protected service, all three on loopback. Prints the curl lines to try; Ctrl-C (or the end
# of any of the three) stops all of them by their PIDs and removes the folder it made.
#
#   npm run build                              # once: the gateway runs from dist/
#   config/forward-auth/try-nginx.sh [BASE_PORT]
#
# Ports: nginx BASE_PORT (8180 unless given), the gateway BASE_PORT+1, the service
# BASE_PORT+2. Needs node (the gateway's), nginx (NGINX=/path/to/nginx if not on PATH or in
# /usr/sbin) and curl only to try it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BASE=${1:-8180}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}

die() {
  printf 'try-nginx: %s\n' "$*" >&2
  exit 1
}

[[ $BASE =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65000 ] ||
  { echo "try-nginx: BASE_PORT must be a number from 1024 to 65000" >&2; exit 2; }
[ -x "$NGINX" ] || die "nginx not found (Debian/Ubuntu: apt-get install nginx; or set NGINX=/path/to/nginx)"
command -v node >/dev/null || die "node not found"
[ -f "$ROOT/dist/cli.js" ] || die "dist/cli.js not found: run npm run build first"

PROXY=$BASE GATEWAY=$((BASE + 1)) SERVICE=$((BASE + 2))
port_open() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
taken=""
for port in "$PROXY" "$GATEWAY" "$SERVICE"; do port_open "$port" && taken="$taken $port"; done
[ -z "$taken" ] || die "port(s)$taken already in use on 127.0.0.1; pick another BASE_PORT"

DIR=$(mktemp -d "${TMPDIR:-/tmp}/accounts-gateway-try-nginx.XXXXXX")
PIDS=()
stop_all() {
  trap - EXIT INT TERM
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$DIR"
  echo "try-nginx: stopped nginx, the gateway and the service; removed $DIR"
}
trap stop_all EXIT
# Ctrl-C reaches the whole process group; each process is stopped here, by its PID.
trap 'exit 0' INT TERM

# The gateway: the memory store with a pair made at start, the check on, nginx trusted.
cat >"$DIR/gateway.yaml" <<EOF
server:
  host: 127.0.0.1
  port: $GATEWAY
  trustedProxies: [127.0.0.1]
admin:
  enabled: false
upstreams:
  service:
    url: http://127.0.0.1:$SERVICE
routes:
  - name: service
    paths: [/hello]
    prefixes: [/hello/]
    methods: [GET, HEAD, POST]
    upstream: service
    upstreamPath: /hello
forwardAuth:
  enabled: true
credentials:
  store: memory
  bcryptCost: 10
  bootstrap:
    enabled: true
    subject: demo
logging:
  level: info
EOF

# nginx.conf of this folder on these ports, in a main config that keeps every file in $DIR.
sed -e "s/127\.0\.0\.1:8080;/127.0.0.1:$GATEWAY;/" -e "s/127\.0\.0\.1:8081;/127.0.0.1:$PROXY;/" \
  -e "s#http://127\.0\.0\.1:3000;#http://127.0.0.1:$SERVICE;#" \
  "$ROOT/config/forward-auth/nginx.conf" >"$DIR/site.conf"
for port in "$GATEWAY" "$PROXY" "$SERVICE"; do
  grep -q "127\.0\.0\.1:$port;" "$DIR/site.conf" || die "nginx.conf no longer has the addresses this script replaces"
done
{
  echo "pid $DIR/nginx.pid;"
  echo "error_log $DIR/nginx-error.log;"
  echo 'events { worker_connections 64; }'
  echo 'http {'
  echo "  access_log $DIR/nginx-access.log;"
  for kind in client_body proxy fastcgi uwsgi scgi; do echo "  ${kind}_temp_path $DIR/$kind;"; done
  echo "  include $DIR/site.conf;"
  echo '}'
} >"$DIR/nginx.conf"

# The protected service: answers with what nginx told it about the caller.
node -e '
  require("node:http").createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ service: "protected", path: req.url,
      subject: req.headers["x-auth-subject"] ?? null, method: req.headers["x-auth-method"] ?? null }) + "\n");
  }).listen(Number(process.argv[1]), "127.0.0.1");
' "$SERVICE" >"$DIR/service.log" 2>&1 &
PIDS+=($!)
SERVICE_PID=$!

node "$ROOT/dist/cli.js" serve --config "$DIR/gateway.yaml" >"$DIR/gateway.log" 2>"$DIR/gateway.err" &
PIDS+=($!)
GATEWAY_PID=$!

# One process in the foreground of its own (no master, no daemon): stopped by its PID.
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/nginx-error.log" \
  -g 'daemon off; master_process off;' >"$DIR/nginx.out" 2>&1 &
PIDS+=($!)
NGINX_PID=$!

# Each ready when its port answers, or a failure as soon as its process has ended.
ready() {
  local name=$1 pid=$2 port=$3 log=$4 tries=0
  until port_open "$port"; do
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$name ended before it listened on $port"; }
    tries=$((tries + 1))
    [ "$tries" -le 1200 ] || die "$name did not listen on $port within a minute (see $log)"
    sleep 0.05
  done
}
ready service "$SERVICE_PID" "$SERVICE" "$DIR/service.log"
ready gateway "$GATEWAY_PID" "$GATEWAY" "$DIR/gateway.err"
ready nginx "$NGINX_PID" "$PROXY" "$DIR/nginx-error.log"

KEY=$(sed -n 's/^  key: *//p' "$DIR/gateway.err")
SECRET=$(sed -n 's/^  secret: *//p' "$DIR/gateway.err")
[ -n "$KEY" ] && [ -n "$SECRET" ] || die "the gateway printed no key pair (see $DIR/gateway.err)"

cat <<EOF
Forward auth on loopback: nginx 127.0.0.1:$PROXY asks the gateway 127.0.0.1:$GATEWAY about each
request for the service 127.0.0.1:$SERVICE (pids: nginx $NGINX_PID, gateway $GATEWAY_PID, service $SERVICE_PID).
Configs and logs: $DIR
Try (without credentials: 401 from the gateway; with the pair made at start: the service):
  curl -i http://127.0.0.1:$PROXY/hello
  curl -i -u '$KEY:$SECRET' http://127.0.0.1:$PROXY/hello
Ctrl-C stops all three.
EOF

# Until Ctrl-C, or until one of the three ends (then the others are stopped too).
set +e
wait -n "${PIDS[@]}"
for log in gateway.err gateway.log nginx-error.log service.log; do
  [ -s "$DIR/$log" ] && { echo "--- $log (last lines)"; tail -n 5 "$DIR/$log"; } >&2
done
die "a process ended by itself; stopping the others"
