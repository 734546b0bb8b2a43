#!/usr/bin/env bash
# bench/h2.sh — HTTP/1.1 against HTTP/2: Volley's client CPU per request on each, and h2load
# (nghttp2-client) as the HTTP/2 peer, against one nginx on 127.0.0.1.
#
# Starts its own nginx (bench/lib.sh: 1 worker pinned to SERVER_CPU, the 615-byte page, access_log
# off) with three more listeners on the same page: PORT+1 TLS (HTTP/1.1 only), PORT+2 TLS with
# HTTP/2 (ALPN h2), PORT+3 cleartext HTTP/2 (h2c, prior knowledge). A self-signed certificate is
# made in NGINX_DIR. Each run is closed-model, C connections, DURATION seconds, the client pinned to
# CLIENT_CPU and timed by GNU time:
#
#   volley-h1       http://   version "1.1"            (the HTTP/1.1 path, cleartext)
#   volley-h2c      http://   version "h2c"            (HTTP/2 cleartext; C VUs = C connections)
#   h2load-h2c      h2load -c C -m 1                   (C connections, one stream each)
#   volley-h1-tls   https://  version "1.1"
#   volley-h2-tls   https://  version "2"              (ALPN h2)
#   h2load-h2-tls   h2load -c C -m 1 over TLS
#
# Output: one CSV row per run (requests, TPS, errors, client CPU s, client µs/request, nginx µs/request,
# other processes' CPU s, protocols Volley reported) in results/h2-STAMP.csv and a table on stdout.
# Every run is bounded by `timeout` (DURATION + 60 s); nothing but 127.0.0.1 is ever loaded.
#
#   bench/h2.sh                                  # C = 10 100 1000, 5 s each
#   CONCURRENCY="10 100" DURATION=5 bench/h2.sh
#
# Env knobs: DURATION (5), CONCURRENCY ("10 100 1000"), TOOLS (all six, in the order above),
# QUIET_TIMEOUT (20: on a shared machine, run after this long and record other_cpu_s instead),
# PORT, CLIENT_CPU, SERVER_CPU, VOLLEY, NGINX, RESULTS_DIR (bench/lib.sh).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

DURATION="${DURATION:-5}"
CONCURRENCY="${CONCURRENCY:-10 100 1000}"
TOOLS="${TOOLS:-volley-h1 volley-h2c h2load-h2c volley-h1-tls volley-h2-tls h2load-h2-tls}"
QUIET_TIMEOUT="${QUIET_TIMEOUT:-20}"
[[ "$DURATION" =~ ^[0-9]+$ ]] || { echo "DURATION must be an integer" >&2; exit 2; }
KILL_AFTER=$((DURATION + 60))
H2LOAD="${H2LOAD:-$(command -v h2load || true)}"
[[ -x "$H2LOAD" ]] || { echo "need h2load (apt-get install -y nghttp2-client)" >&2; exit 1; }
need openssl "apt-get install openssl"

bench_prereqs
ensure_volley
raise_nofile

# nginx: lib.sh's config plus the TLS and HTTP/2 listeners (nginx 1.22 takes http2 on the listen
# line; 1.25.1+ also accepts it there, with a deprecation warning).
eval "lib_$(declare -f nginx_config)"
nginx_config() {
  lib_nginx_config
  [[ -s "$NGINX_DIR/cert.pem" ]] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$NGINX_DIR/key.pem" -out "$NGINX_DIR/cert.pem" 2>/dev/null || exit 1
  local more
  more="$(cat <<EOF
    server { listen $HOST:$((PORT + 1)) ssl backlog=4096; ssl_certificate $NGINX_DIR/cert.pem; ssl_certificate_key $NGINX_DIR/key.pem; root $NGINX_DIR/html; location / { } }
    server { listen $HOST:$((PORT + 2)) ssl http2 backlog=4096; ssl_certificate $NGINX_DIR/cert.pem; ssl_certificate_key $NGINX_DIR/key.pem; http2_max_concurrent_streams 128; root $NGINX_DIR/html; location / { } }
    server { listen $HOST:$((PORT + 3)) http2 backlog=4096; root $NGINX_DIR/html; location / { } }
}
EOF
)"
  # replace the config's closing brace (its last line) with the extra servers and the brace
  sed -i '$d' "$NGINX_DIR/nginx.conf"
  printf '%s\n' "$more" >> "$NGINX_DIR/nginx.conf"
}

SCRATCH="$(mktemp -d /tmp/volley-h2bench.XXXXXX)"
cleanup() { rm -rf "$SCRATCH"; nginx_stop; }
trap cleanup EXIT
trap 'exit 130' INT TERM
nginx_start

CSV="$RESULTS_DIR/h2-$STAMP.csv"
echo "tool,concurrency,duration_s,requests,tps,errors,client_cpu_s,client_us_per_req,nginx_us_per_req,other_cpu_s,protocols" > "$CSV"
page=/index.html

run_one() {  # tool C -> a CSV row
  local tool="$1" c="$2" base="$SCRATCH/$1-c$2" url http="" bin
  local -a cmd
  case "$tool" in
    volley-h1)     url="http://$HOST:$PORT$page" ;;
    volley-h2c)    url="http://$HOST:$((PORT + 3))$page"; http='{"version":"h2c"}' ;;
    volley-h1-tls) url="https://$HOST:$((PORT + 1))$page"; http='{"insecure_skip_verify":true}' ;;
    volley-h2-tls) url="https://$HOST:$((PORT + 2))$page"; http='{"version":"2","insecure_skip_verify":true}' ;;
    h2load-h2c)    url="http://$HOST:$((PORT + 3))$page" ;;
    h2load-h2-tls) url="https://$HOST:$((PORT + 2))$page" ;;
  esac
  case "$tool" in
    volley-*) volley_plan "$base.plan.json" "$url" "$c" "$DURATION" "$http"
              cmd=("$VOLLEY" run "$base.plan.json" --out "$base.out" -q) ;;
    h2load-*) cmd=("$H2LOAD" -t 1 -c "$c" -m 1 -D "$DURATION" "$url") ;;
  esac
  wait_quiet
  local wpid n0 n1 s0 s1
  wpid="$(nginx_worker)" || { echo "nginx worker not found" >&2; return 1; }
  n0="$(proc_ticks "$wpid")"; s0="$(sys_ticks)"
  timeout -k 5 "$KILL_AFTER" "$TIME_BIN" -o "$base.time" -f '%U %S' taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$base.stdout" 2> "$base.err"
  n1="$(proc_ticks "$wpid")"; s1="$(sys_ticks)"
  local req err protos="" tline
  case "$tool" in
    volley-*) req="$(jq -r '.requests // 0' "$base.out" 2>/dev/null || echo 0)"
              err="$(jq -r '.errors // 0' "$base.out" 2>/dev/null || echo 0)"
              protos="$(jq -r '(.protocols // {}) | to_entries | map("\(.key)=\(.value)") | join(" ")' "$base.out" 2>/dev/null)" ;;
    h2load-*) # "requests: N total, N started, N done, N succeeded, F failed, E errored, T timeout"
              req="$(awk '/^requests:/{print $8; exit}' "$base.stdout")"
              err="$(awk '/^requests:/{print $10+$12+$14; exit}' "$base.stdout")"
              protos="$(awk '/^Application protocol:/{print $3; exit}' "$base.stdout")=$req" ;;
  esac
  tline="$(grep -E '^[0-9.]+ [0-9.]+$' "$base.time" | tail -n1)"
  awk -v tool="$tool" -v c="$c" -v d="$DURATION" -v req="${req:-0}" -v err="${err:-0}" -v t="${tline:-0 0}" \
      -v n0="$n0" -v n1="$n1" -v s0="$s0" -v s1="$s1" -v hz="$CLK_TCK" -v protos="$protos" 'BEGIN{
    split(t, x, " "); cpu = x[1] + x[2]; split(s0, a, " "); split(s1, b, " ")
    ng = (n1 - n0) / hz; other = (b[2] - a[2]) / hz - cpu - ng; if (other < 0) other = 0
    printf "%s,%d,%d,%d,%.0f,%d,%.2f,%.2f,%.2f,%.2f,%s\n", tool, c, d, req, req / d, err, cpu,
      (req > 0 ? cpu / req * 1e6 : 0), (req > 0 ? ng / req * 1e6 : 0), other, protos }' >> "$CSV"
  tail -n1 "$CSV"
}

echo "# $(machine_line); $(volley_version); h2load $("$H2LOAD" --version | awk '{print $2}'); nginx $(nginx_version)" >&2
for c in $CONCURRENCY; do
  for tool in $TOOLS; do
    run_one "$tool" "$c"
    sleep 1
  done
done
echo
column -s, -t < "$CSV"
echo "CSV: $CSV"
