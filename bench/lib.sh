# bench/lib.sh — helpers shared by the bench scripts. Sourced, never run on its own.
#
# Provides: the nginx target (one worker pinned to SERVER_CPU, a 615-byte page on 127.0.0.1:PORT,
# keep-alive, access_log off, a stub_status counter at /nginx_status), the quiet-machine gate, CPU
# accounting from /proc, the Volley binary, a warm-up run, integer checks and the open-files limit.
# Every process it starts is remembered by PID and only those are stopped.
#
# Env (all optional): VOLLEY (binary, default bin/volley, built when missing), PORT (nginx, 18088),
# CLIENT_CPU (0), SERVER_CPU (1), NGINX (binary), NGINX_DIR (/tmp/volley-bench-nginx-PORT),
# QUIET_MAX (0.15 busy cores), QUIET_TIMEOUT (180 s), TIME_BIN (/usr/bin/time), RESULTS_DIR.

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
HOST=127.0.0.1                       # hard-wired: the load only ever goes to loopback
PORT="${PORT:-18088}"
[[ "$PORT" =~ ^[0-9]+$ ]] || { echo "PORT must be numeric" >&2; exit 2; }
CLIENT_CPU="${CLIENT_CPU:-0}"
SERVER_CPU="${SERVER_CPU:-1}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
NGINX_DIR="${NGINX_DIR:-/tmp/volley-bench-nginx-$PORT}"
NGINX_STATUS_PATH=/nginx_status
QUIET_MAX="${QUIET_MAX:-0.15}"
QUIET_TIMEOUT="${QUIET_TIMEOUT:-180}"
TIME_BIN="${TIME_BIN:-/usr/bin/time}"
RESULTS_DIR="${RESULTS_DIR:-$BENCH_DIR/results}"
VOLLEY="${VOLLEY:-$ROOT/bin/volley}"
CLK_TCK="$(getconf CLK_TCK)"
PAGE_SIZE="$(getconf PAGESIZE)"
STAMP="$(date +%Y%m%d-%H%M%S)"

need() {  # need CMD "how to install"
  command -v "$1" >/dev/null 2>&1 || { echo "need $1 ($2)" >&2; exit 1; }
}

bench_prereqs() {
  [[ -x "$TIME_BIN" ]] || { echo "need GNU time at $TIME_BIN (apt-get install time)" >&2; exit 1; }
  need taskset "apt-get install util-linux"
  need jq "apt-get install jq"
  need curl "apt-get install curl"
  mkdir -p "$RESULTS_DIR"
}

# ensure_volley builds bin/volley when it is missing (the Go binary alone is enough for benchmarks;
# `make build` also embeds the UI).
ensure_volley() {
  if [[ ! -x "$VOLLEY" ]]; then
    echo "building $VOLLEY" >&2
    (cd "$ROOT" && go build -trimpath -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" \
      -o "$VOLLEY" ./backend/cmd/volley) || exit 1
  fi
}

# check_ints N...: exit 2 unless every argument is a non-negative integer (the scripts' numeric knobs).
check_ints() {
  local n
  for n in "$@"; do [[ "$n" =~ ^[0-9]+$ ]] || { echo "not an integer: $n" >&2; exit 2; }; done
}

# raise_nofile lifts the soft open-files limit to the hard one; each VU holds one socket.
raise_nofile() {
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# ------------------------------------------------------------------ nginx target ----------------
NGINX_STARTED=0
nginx_pidfile() { echo "$NGINX_DIR/nginx.pid"; }

nginx_master() {
  local f p; f="$(nginx_pidfile)"
  [[ -s "$f" ]] || return 1
  p="$(cat "$f")"
  kill -0 "$p" 2>/dev/null || return 1
  echo "$p"
}

nginx_worker() {  # the single worker: a child of our own master, found by parent PID
  local m w; m="$(nginx_master)" || return 1
  w="$(pgrep -P "$m" | head -n1)"
  [[ -n "$w" ]] || return 1
  echo "$w"
}

nginx_config() {
  mkdir -p "$NGINX_DIR/html" "$NGINX_DIR/tmp" "$NGINX_DIR/logs"
  : > "$NGINX_DIR/logs/error.log"
  # A 615-byte HTML page.
  cat > "$NGINX_DIR/html/index.html" <<'EOF'
<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
EOF
  cat > "$NGINX_DIR/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 16384;
pid $(nginx_pidfile);
error_log $NGINX_DIR/logs/error.log warn;
events {
    worker_connections 8192;
    use epoll;
}
http {
    access_log off;
    types { text/html html; }
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 2000000000;
    open_file_cache max=64 inactive=60s;
    open_file_cache_valid 60s;
    client_body_temp_path $NGINX_DIR/tmp/body;
    proxy_temp_path       $NGINX_DIR/tmp/proxy;
    fastcgi_temp_path     $NGINX_DIR/tmp/fastcgi;
    uwsgi_temp_path       $NGINX_DIR/tmp/uwsgi;
    scgi_temp_path        $NGINX_DIR/tmp/scgi;
    server {
        listen $HOST:$PORT backlog=4096;
        server_name localhost;
        root $NGINX_DIR/html;
        location / { }
        location = $NGINX_STATUS_PATH { stub_status; }
    }
}
EOF
}

# nginx_start starts nginx unless ours is already up on PORT; nginx_stop stops it only if we started it.
nginx_start() {
  if nginx_master >/dev/null; then return 0; fi
  [[ -x "$NGINX" ]] || { echo "nginx not found (apt-get install nginx, or set NGINX=)" >&2; exit 1; }
  nginx_config
  "$NGINX" -t -q -p "$NGINX_DIR" -e "$NGINX_DIR/logs/error.log" -c "$NGINX_DIR/nginx.conf" >&2 || exit 1
  # the master daemonizes; it and its worker inherit the CPU affinity
  taskset -c "$SERVER_CPU" "$NGINX" -p "$NGINX_DIR" -e "$NGINX_DIR/logs/error.log" -c "$NGINX_DIR/nginx.conf" || exit 1
  local _
  for _ in $(seq 50); do
    if nginx_master >/dev/null && nginx_worker >/dev/null; then NGINX_STARTED=1; return 0; fi
    sleep 0.1
  done
  echo "nginx did not come up; see $NGINX_DIR/logs/error.log" >&2; exit 1
}

nginx_stop() {
  [[ $NGINX_STARTED == 1 ]] || return 0
  local m _
  if m="$(nginx_master)"; then
    kill -QUIT "$m"
    for _ in $(seq 50); do kill -0 "$m" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$m" 2>/dev/null && kill -TERM "$m"
  fi
  NGINX_STARTED=0
}

# nginx_requests prints the requests nginx has handled since it started (stub_status; the status
# request itself included).
nginx_requests() {
  curl -fsS --max-time 2 "http://$HOST:$PORT$NGINX_STATUS_PATH" | awk 'NR==3{print $3; f=1} END{exit !f}'
}

nginx_version() { "$NGINX" -v 2>&1 | awk -F/ '{print $2}'; }

# ------------------------------------------------------------------ CPU accounting --------------
proc_ticks() {  # utime+stime of one PID, in clock ticks
  [[ -r /proc/$1/stat ]] || { echo 0; return; }
  sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}

proc_rss_kb() {  # resident set of one PID, in KiB
  awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

proc_hwm_kb() {  # peak resident set of one PID so far, in KiB
  awk '/^VmHWM:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

sys_ticks() {  # "busy procs irq+softirq steal busy_clientcpu busy_servercpu", in clock ticks
  awk -v cc="cpu$CLIENT_CPU" -v sc="cpu$SERVER_CPU" '
    $1=="cpu" {b=$2+$3+$4+$7+$8+$9; pr=$2+$3+$4; si=$7+$8; st=$9}
    $1==cc {bc=$2+$3+$4+$7+$8+$9}
    $1==sc {bs=$2+$3+$4+$7+$8+$9}
    END {print b, pr, si, st, bc, bs}' /proc/stat
}

# PIDS holds the processes a script starts (PIDS+=("$!")); pids_cleanup, its EXIT trap, stops
# those still running (stop_pid, STOP_WAIT seconds each, default 5), then nginx.
PIDS=()
stop_pid() {  # stop_pid PID [SECONDS]: TERM, up to SECONDS (default 5) for it to exit, then KILL
  local p="$1" _
  kill -0 "$p" 2>/dev/null || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq $((${2:-5} * 10))); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null
}
pids_cleanup() {
  local p
  for p in "${PIDS[@]}"; do stop_pid "$p" "${STOP_WAIT:-5}"; done
  nginx_stop
}

# model_defaults sets the load's settings from the environment: MODEL (open|closed), RATE (5000
# /s), PRE_VUS (50), MAX_VUS (1000), VUS (30), DURATION (10 s; "10s" is accepted), and checks them.
model_defaults() {
  MODEL="${MODEL:-open}"
  RATE="${RATE:-5000}"
  PRE_VUS="${PRE_VUS:-50}"
  MAX_VUS="${MAX_VUS:-1000}"
  VUS="${VUS:-30}"
  DURATION="${DURATION:-10}"; DURATION="${DURATION%s}"
  check_ints "$RATE" "$PRE_VUS" "$MAX_VUS" "$VUS" "$DURATION"
  [[ $MODEL == open || $MODEL == closed ]] || { echo "MODEL must be open or closed" >&2; exit 2; }
}

# model_load sets LOAD (a plan's "load" JSON) and LOAD_TEXT from MODEL: open, constant-arrival-rate
# RATE/s (PRE_VUS, MAX_VUS); closed, constant-vus VUS; both for DURATION seconds.
model_load() {
  if [[ $MODEL == open ]]; then
    LOAD="$(jq -n --argjson rate "$RATE" --arg dur "${DURATION}s" --argjson pre "$PRE_VUS" --argjson max "$MAX_VUS" \
      '{executor: "constant-arrival-rate", rate: $rate, duration: $dur, pre_allocated_vus: $pre, max_vus: $max}')"
    LOAD_TEXT="constant-arrival-rate $RATE/s for ${DURATION}s (pre_allocated_vus $PRE_VUS, max_vus $MAX_VUS)"
  else
    LOAD="$(jq -n --argjson vus "$VUS" --arg dur "${DURATION}s" '{executor: "constant-vus", vus: $vus, duration: $dur}')"
    LOAD_TEXT="constant-vus $VUS VUs for ${DURATION}s"
  fi
}

# wait_quiet blocks until the machine (all cores, everything) is below QUIET_MAX busy cores over
# 2 s, or QUIET_TIMEOUT passes (then it runs anyway and says so). Our idle nginx counts as ~0.
QUIET_WAITED=0
wait_quiet() {
  local t0=$SECONDS a b busy
  while :; do
    a="$(sys_ticks)"; sleep 2; b="$(sys_ticks)"
    busy="$(awk -v a="$a" -v b="$b" -v hz="$CLK_TCK" 'BEGIN{split(a,x," "); split(b,y," "); printf "%.2f", (y[1]-x[1])/hz/2}')"
    if awk -v v="$busy" -v m="$QUIET_MAX" 'BEGIN{exit !(v<=m)}'; then QUIET_WAITED=$((SECONDS - t0)); return 0; fi
    if (( SECONDS - t0 > QUIET_TIMEOUT )); then
      echo "  quiet gate: still $busy busy cores after ${QUIET_TIMEOUT}s; running anyway (see other_cpu_s)" >&2
      QUIET_WAITED=$((SECONDS - t0)); return 0
    fi
    echo "  quiet gate: $busy cores busy by other processes, waiting" >&2
    sleep 5
  done
}

# rotating_rounds: ROUNDS rounds of every configuration in the array CONF, the order rotated each
# round so that each goes first equally often and drift hits all of them. Each run is the
# script's run_conf CONFIG ROUND (one CSV row on stdout), after the quiet gate; its row goes to
# CSV and, as the script's md_row renders it (the row on stdin, a Markdown line out), to MD;
# PAUSE seconds between runs. A run_conf that fails is left out.
rotating_rounds() {
  local round k j conf row
  k=${#CONF[@]}
  for round in $(seq "$ROUNDS"); do
    for j in $(seq 0 $((k - 1))); do
      conf="${CONF[$(( (j + round - 1) % k ))]}"
      wait_quiet
      echo "run: round=$round config=$conf" >&2
      row="$(run_conf "$conf" "$round")" || continue
      echo "$row" >> "$CSV"; echo "  $row" >&2
      md_row <<<"$row" >> "$MD"
      sleep "$PAUSE"
    done
  done
}

# ------------------------------------------------------------------ reporting -------------------
machine_line() {
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
}

volley_version() {  # "volley <version> (<go version>)"; make build stamps the git version
  local v; v="$("$VOLLEY" --version 2>/dev/null | awk '{print $NF; exit}')"
  echo "volley ${v:-?} ($(go version -m "$VOLLEY" 2>/dev/null | head -n1 | awk '{print $2}'))"
}

go_bin_version() {  # main module and version embedded in a Go binary
  go version -m "$1" 2>/dev/null | awk '$1=="mod"{m=$3} $1=="path"&&!p{p=$2} NR==1{g=$2} END{printf "%s %s (%s)", p, m, g}'
}

# volley_warmup DIR: an unrecorded WARMUP-second run (10 VUs at URL) so that the page cache, nginx
# and the CPU frequency settle, then PAUSE seconds; nothing when WARMUP is 0.
volley_warmup() {
  [[ "$WARMUP" != 0 ]] || return 0
  volley_plan "$1/warmup.json" "$URL" 10 "$WARMUP"
  timeout -k 5 $((WARMUP + 30)) taskset -c "$CLIENT_CPU" "$VOLLEY" run "$1/warmup.json" -q >/dev/null 2>&1
  sleep "$PAUSE"
}

# volley_plan FILE URL VUS DURATION_S [extra http JSON] — a closed-model plan (constant-vus).
volley_plan() {
  local file="$1" url="$2" vus="$3" dur="$4" http="${5:-}"
  jq -n --arg url "$url" --argjson vus "$vus" --arg dur "${dur}s" --argjson http "${http:-{\}}" \
    '{name: "bench", requests: [{url: $url}],
      load: {executor: "constant-vus", vus: $vus, duration: $dur},
      http: ({timeout: "10s"} + $http)}' > "$file"
}

# bench_start NAME: what a comparison of configurations (onepath.sh, scale.sh) does before its
# runs — the prerequisites and volley binary; OUT (RESULTS_DIR/NAME-STAMP/), CSV and MD; every
# process started by PID (PIDS) stopped by the EXIT trap (pids_cleanup); nginx started and its
# stub_status answering; the model's LOAD and OUT/plan.json: one request to URL under it.
bench_start() {
  bench_prereqs
  ensure_volley
  raise_nofile
  OUT="$RESULTS_DIR/$1-$STAMP"
  mkdir -p "$OUT"
  CSV="$OUT.csv"
  MD="$OUT.md"
  trap pids_cleanup EXIT
  trap 'exit 130' INT TERM
  nginx_start
  nginx_requests >/dev/null || { echo "nginx stub_status does not answer at $HOST:$PORT$NGINX_STATUS_PATH" >&2; exit 1; }
  model_load
  jq -n --arg name "$1" --arg url "$URL" --argjson load "$LOAD" \
    '{name: $name, requests: [{url: $url}], load: $load, http: {timeout: "10s"}}' > "$OUT/plan.json"
}
