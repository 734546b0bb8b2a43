#!/usr/bin/env bash
# bench/soak.sh — a long constant-vus run against nginx: does Volley's memory stay flat?
#
# Starts nginx as bench.sh does, runs `volley run` pinned to CLIENT_CPU for DURATION seconds and
# samples the volley process's RSS (VmRSS in /proc/PID/status) and CPU every SAMPLE seconds.
# Reports each sample, then first / last / max RSS, the growth from the first sample after warm-up
# (the second sample) to the last, and the run's summary (requests, TPS, errors, latency).
#
#   bench/soak.sh                      # 5 minutes, 100 VUs
#   DURATION=60 VUS=500 bench/soak.sh
#
# Env: DURATION (300), VUS (100), SAMPLE (10), PORT (18088), CLIENT_CPU (0), SERVER_CPU (1),
#      QUIET_MAX, QUIET_TIMEOUT, VOLLEY, RESULTS_DIR.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

DURATION="${DURATION:-300}"
VUS="${VUS:-100}"
SAMPLE="${SAMPLE:-10}"
for n in $DURATION $VUS $SAMPLE; do [[ "$n" =~ ^[0-9]+$ && $n -gt 0 ]] || { echo "not a positive integer: $n" >&2; exit 2; }; done
URL="http://$HOST:$PORT/index.html"

bench_prereqs
ensure_volley
raise_nofile
OUT="$RESULTS_DIR/soak-$STAMP"
mkdir -p "$OUT"
CSV="$OUT.csv"

VPID=""
cleanup() {
  if [[ -n "$VPID" ]] && kill -0 "$VPID" 2>/dev/null; then kill -INT "$VPID"; sleep 3; kill -KILL "$VPID" 2>/dev/null; fi
  nginx_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
nginx_start

volley_plan "$OUT/plan.json" "$URL" "$VUS" "$DURATION"
wait_quiet
echo "soak: $VUS VUs for ${DURATION}s, RSS every ${SAMPLE}s" >&2
# taskset execs volley, so $! is volley's own PID
taskset -c "$CLIENT_CPU" "$VOLLEY" run "$OUT/plan.json" --out "$OUT/summary.json" -q > "$OUT/stdout.txt" 2>&1 &
VPID=$!
echo "t_s,rss_kb,cpu_s" > "$CSV"
t0="$(date +%s.%N)"
next=$SAMPLE
limit=$((DURATION + 60))
while kill -0 "$VPID" 2>/dev/null; do
  now="$(awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{print t - t0}')"
  if awk -v n="$now" -v x="$next" 'BEGIN{exit !(n >= x)}'; then
    rss="$(proc_rss_kb "$VPID")"; cpu="$(awk -v t="$(proc_ticks "$VPID")" -v hz="$CLK_TCK" 'BEGIN{printf "%.2f", t/hz}')"
    [[ -n "$rss" && "$rss" != 0 ]] && { echo "$next,$rss,$cpu" >> "$CSV"; echo "  t=${next}s rss=$((rss / 1024)) MiB cpu=${cpu}s" >&2; }
    next=$((next + SAMPLE))
  fi
  if awk -v n="$now" -v l="$limit" 'BEGIN{exit !(n > l)}'; then echo "volley still running after ${limit}s; stopping it" >&2; kill -INT "$VPID"; fi
  sleep 0.2
done
wait "$VPID"; rc=$?
VPID=""

{
  echo "## soak $STAMP"
  echo
  echo "- machine: $(machine_line); $(volley_version)"
  echo "- constant-vus $VUS VUs for ${DURATION}s against GET $URL (nginx $(nginx_version), 1 worker on CPU $SERVER_CPU); volley on CPU $CLIENT_CPU; exit $rc"
  echo "- $(jq -r '"requests \(.requests), TPS \(.rps | floor), errors \(.errors), p50 \(.latency_ms.p50) ms, p99 \(.latency_ms.p99) ms, summary rss_bytes_max \(.client.rss_bytes_max / 1048576 * 10 | floor / 10) MiB, heap allocs/request \(.client.heap_allocs_per_request)"' "$OUT/summary.json" 2>/dev/null)"
  echo
  echo "| t s | RSS MiB | volley CPU s |"
  echo "|---:|---:|---:|"
  awk -F, 'NR>1 { printf "| %d | %.1f | %.2f |\n", $1, $2/1024, $3 }' "$CSV"
  echo
  awk -F, 'NR==2 {first=$2} NR==3 {warm=$2} NR>1 {last=$2; if ($2>max) max=$2; n++}
    END { if (n == 0) { print "no samples"; exit }
          if (warm == "") warm = first
          printf "RSS first %.1f MiB, last %.1f MiB, max %.1f MiB; last − second sample = %+.1f MiB over %d samples.\n",
            first/1024, last/1024, max/1024, (last-warm)/1024, n }' "$CSV"
} > "$OUT.md"
cat "$OUT.md"
echo "CSV: $CSV" >&2
