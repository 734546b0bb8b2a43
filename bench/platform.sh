#!/usr/bin/env bash
# bench/platform.sh — the same plan run headless and from the web platform with live viewers:
# does the platform (SQLite writes each second, the websocket hub, the API) cost throughput?
#
# Starts nginx as bench.sh does and `volley serve` on 127.0.0.1:SERVE_PORT (own temporary database,
# --demo-target ""), both volley processes pinned to CLIENT_CPU. Each round runs the plan
#   (a) headless: `volley run plan.json --out summary.json -q`
#   (b) on the server: POST /api/plans once; then per run bench/wsclient (pinned to SERVER_CPU)
#       POSTs /api/plans/:id/runs and attaches WATCHERS websocket clients to /api/runs/:id/live
#       until the summary arrives; then GET /api/runs/:id;
# alternating which goes first. Reports TPS of each, the ratio platform / headless per round and
# of the medians (target ≥ 98 %), CPU per request of each, and what the viewers received.
#
#   bench/platform.sh
#   VUS=50 DURATION=5 ROUNDS=1 bench/platform.sh
#
# A run during which other processes used more than MAX_OTHER cores on average is retried (RETRIES).
#
# Env: VUS (100), DURATION (10), ROUNDS (3), WATCHERS (5), SERVE_PORT (18089), PORT (18088),
#      CLIENT_CPU (0), SERVER_CPU (1; nginx and the viewers), PAUSE (2), MAX_OTHER (0.10), RETRIES (2),
#      QUIET_MAX, QUIET_TIMEOUT, VOLLEY, RESULTS_DIR.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

VUS="${VUS:-100}"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-3}"
WATCHERS="${WATCHERS:-5}"
SERVE_PORT="${SERVE_PORT:-18089}"
PAUSE="${PAUSE:-2}"
MAX_OTHER="${MAX_OTHER:-0.10}"
RETRIES="${RETRIES:-2}"
for n in $VUS $DURATION $ROUNDS $WATCHERS $SERVE_PORT; do [[ "$n" =~ ^[0-9]+$ ]] || { echo "not an integer: $n" >&2; exit 2; }; done
URL="http://$HOST:$PORT/index.html"
API="http://$HOST:$SERVE_PORT/api"

bench_prereqs
ensure_volley
raise_nofile
OUT="$RESULTS_DIR/platform-$STAMP"
mkdir -p "$OUT"
CSV="$OUT.csv"
WORK="$(mktemp -d /tmp/volley-platform.XXXXXX)"
WSCLIENT="$WORK/wsclient"
(cd "$ROOT" && go build -o "$WSCLIENT" ./bench/wsclient) || exit 1

SERVE_PID=""
cleanup() {
  if [[ -n "$SERVE_PID" ]]; then
    kill -TERM "$SERVE_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVE_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
  nginx_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
nginx_start

taskset -c "$CLIENT_CPU" "$VOLLEY" serve --addr "$HOST:$SERVE_PORT" --db "$WORK/volley.db" --demo-target "" > "$OUT/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do curl -fsS -o /dev/null --max-time 1 "$API/plans" && break; sleep 0.1; done
curl -fsS -o /dev/null --max-time 1 "$API/plans" || { echo "volley serve did not come up (see $OUT/serve.log)" >&2; exit 1; }

volley_plan "$OUT/plan.json" "$URL" "$VUS" "$DURATION"
PLAN_ID="$(curl -fsS --max-time 5 -H 'Content-Type: application/json' --data-binary @"$OUT/plan.json" "$API/plans" | jq -r .id)"
[[ "$PLAN_ID" =~ ^[0-9]+$ ]] || { echo "could not create the plan" >&2; exit 1; }

CSV_HEADER="round,mode,attempt,tps,requests,errors,p50_ms,p99_ms,volley_cpu_s,us_per_req,maxrss_kb,nginx_cpu_s,other_cpu_s,window_s,watchers_with_summary,watcher_samples,watcher_gaps,run_id"
echo "$CSV_HEADER" > "$CSV"
echo "$CSV_HEADER" > "$OUT-rejected.csv"

# Each run_* writes one row to $ROWFILE. Around it: nginx worker ticks and /proc/stat, so that the
# CPU used by other processes during the run is known (a run disturbed by foreign load is retried).
measure_begin() { M_W="$(nginx_worker)"; M_N0="$(proc_ticks "$M_W")"; M_S0="$(sys_ticks)"; M_T0="$(date +%s.%N)"; }
measure_end() {  # volley_cpu_s -> "nginx_cpu_s other_cpu_s window_s"
  local n1 s1 t1; n1="$(proc_ticks "$M_W")"; s1="$(sys_ticks)"; t1="$(date +%s.%N)"
  awk -v v="$1" -v n0="$M_N0" -v n1="$n1" -v a="$M_S0" -v b="$s1" -v t0="$M_T0" -v t1="$t1" -v hz="$CLK_TCK" 'BEGIN{
    split(a, x, " "); split(b, y, " "); ng = (n1 - n0) / hz
    o = (y[2] - x[2]) / hz - v - ng; if (o < 0) o = 0
    printf "%.2f %.2f %.2f", ng, o, t1 - t0 }'
}

run_headless() {  # round attempt
  local s="$OUT/headless-$1-$2.json" tf="$OUT/headless-$1-$2.time" t cpu m
  measure_begin
  timeout -k 5 $((DURATION + 60)) "$TIME_BIN" -o "$tf" -f '%U %S %M %e' \
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "$OUT/plan.json" --out "$s" -q > /dev/null 2>&1
  t="$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$tf" | tail -n1)"; t="${t:-0 0 0 0}"
  cpu="$(awk -v t="$t" 'BEGIN{split(t, f, " "); printf "%.2f", f[1] + f[2]}')"
  m="$(measure_end "$cpu")"
  jq -r --arg r "$1" --arg a "$2" --arg cpu "$cpu" --arg rss "$(cut -d' ' -f3 <<<"$t")" --arg m "$m" '($m | split(" ")) as $m |
    [$r, "headless", $a, .rps, .requests, .errors, .latency_ms.p50, .latency_ms.p99, $cpu,
     (if .requests > 0 then (($cpu | tonumber) / .requests * 1e6 * 100 | round / 100) else 0 end), $rss,
     $m[0], $m[1], $m[2], "", "", "", ""] | map(tostring) | join(",")' "$s" > "$ROWFILE"
}

# The platform run is started by the viewers' own process (wsclient -start: POST …/runs, then
# WATCHERS websockets on the run it answered with), so that while the run is measured nothing but
# the viewers runs beside the server: no curl, jq or status poll, which cost ~0.08 CPU-s per second
# (~8 % of a core) on this machine and, unpinned, took it from the volley and nginx cores. The
# viewers' streams end with the summary, i.e. when the run has ended; the run's status is then
# read once (the summary may reach the viewers a moment before it is stored).
run_platform() {  # round attempt
  local rid c0 c1 status ws="$OUT/watchers-$1-$2.jsonl" t0 cpu m
  measure_begin
  c0="$(proc_ticks "$SERVE_PID")"
  t0=$SECONDS
  taskset -c "$SERVER_CPU" "$WSCLIENT" -start "$API/plans/$PLAN_ID/runs" -url "ws://$HOST:$SERVE_PORT/api/runs/{id}/live" \
    -n "$WATCHERS" -timeout $((DURATION + 60))s > "$ws" 2> "$ws.err"
  rid="$(tail -n1 "$ws" | sed -n 's/.*"run":\([0-9]*\).*/\1/p')"
  [[ "$rid" =~ ^[0-9]+$ ]] || { echo "could not start a run: $(cat "$ws.err")" >&2; return 1; }
  # Normally answered "finished" at once; polls only when the viewers ended early (a lost stream).
  while status="$(curl -fsS --max-time 5 "$API/runs/$rid" | jq -r .status)"; [[ "$status" == running ]]; do
    if (( SECONDS - t0 > DURATION + 60 )); then
      echo "run $rid still running after $((DURATION + 60))s; stopping it" >&2
      curl -fsS --max-time 5 -X POST -H 'Content-Type: application/json' "$API/runs/$rid/stop" > /dev/null; sleep 6
      break
    fi
    sleep 0.5
  done
  c1="$(proc_ticks "$SERVE_PID")"
  cpu="$(awk -v a="$c0" -v b="$c1" -v hz="$CLK_TCK" 'BEGIN{printf "%.2f", (b-a)/hz}')"
  m="$(measure_end "$cpu")"
  curl -fsS --max-time 5 "$API/runs/$rid" > "$OUT/platform-$1-$2.json"
  local wsum ngaps
  wsum="$(tail -n1 "$ws")"
  [[ "$wsum" == '{"clients"'* ]] || wsum='{}'
  ngaps="$(grep '"client"' "$ws" | jq -s 'map(.gaps) | add // 0')"
  jq -r --arg r "$1" --arg a "$2" --arg cpu "$cpu" --arg rss "$(proc_hwm_kb "$SERVE_PID")" --arg m "$m" \
        --argjson w "$wsum" --arg gaps "$ngaps" --arg rid "$rid" '($m | split(" ")) as $m | .summary as $s |
    [$r, "platform", $a, $s.rps, $s.requests, $s.errors, $s.latency_ms.p50, $s.latency_ms.p99, $cpu,
     (if $s.requests > 0 then (($cpu | tonumber) / $s.requests * 1e6 * 100 | round / 100) else 0 end), $rss,
     $m[0], $m[1], $m[2], ($w.with_summary // 0), ($w.samples // 0), $gaps, $rid] | map(tostring) | join(",")' \
    "$OUT/platform-$1-$2.json" > "$ROWFILE"
}

ROWFILE="$WORK/row"
for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order="headless platform"; else order="platform headless"; fi
  for mode in $order; do
    for attempt in $(seq 1 $((RETRIES + 1))); do
      wait_quiet
      echo "run: round=$round $mode, $VUS VUs ${DURATION}s (try $attempt)" >&2
      : > "$ROWFILE"
      "run_$mode" "$round" "$attempt"
      row="$(cat "$ROWFILE")"
      other="$(cut -d, -f13 <<<"$row")"; win="$(cut -d, -f14 <<<"$row")"
      if awk -v o="${other:-0}" -v w="${win:-0}" -v m="$MAX_OTHER" 'BEGIN{exit !(w>0 && o/w<=m)}' || (( attempt > RETRIES )); then
        echo "$row" >> "$CSV"; echo "  $row" >&2; sleep "$PAUSE"; break
      fi
      echo "$row" >> "$OUT-rejected.csv"
      echo "  rejected (other processes used ${other}s CPU in ${win}s): $row" >&2
      sleep "$PAUSE"
    done
  done
done

{
  echo "## platform $STAMP"
  echo
  echo "- machine: $(machine_line); $(volley_version)"
  echo "- plan: constant-vus $VUS VUs, ${DURATION}s, GET $URL (nginx $(nginx_version), 1 worker on CPU $SERVER_CPU); volley on CPU $CLIENT_CPU"
  echo "- platform: \`volley serve\` (SQLite in a temporary folder), $WATCHERS websocket viewers on /api/runs/:id/live"
  echo
  echo "| round | mode | TPS | requests | errors | p50 ms | p99 ms | volley CPU s | µs/req | peak RSS MiB | nginx CPU s | other CPU s | viewers with summary | samples received | gaps |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR>1 { printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s |\n", $1, $2, $4, $5, $6, $7, $8, $9, $10, $11/1024, $12, $13, ($15==""?"–":$15), ($16==""?"–":$16), ($17==""?"–":$17) }' "$CSV"
  echo
  awk -F, '
    function median(a, n,   i, j, t) { if (n == 0) return 0
                                       for (i = 2; i <= n; i++) { t = a[i]; j = i - 1; while (j > 0 && a[j] > t) { a[j+1] = a[j]; j-- } a[j+1] = t }
                                       return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
    NR>1 { tps[$1, $2] = $4; upr[$1, $2] = $10; if ($2 == "headless") h[++nh] = $4; else p[++np] = $4; rounds[$1] = 1 }
    END {
      for (r in rounds) if ((r, "headless") in tps && (r, "platform") in tps && tps[r, "headless"] > 0) {
        q[++nq] = tps[r, "platform"] / tps[r, "headless"]; if (upr[r, "headless"] > 0) u[++nu] = upr[r, "platform"] / upr[r, "headless"] }
      mh = median(h, nh); mp = median(p, np); mq = median(q, nq); mu = median(u, nu)
      printf "Median TPS: headless %.0f, platform %.0f; platform / headless = %.1f%% (median of per-round ratios %.1f%%) — target ≥ 98%%: %s.\n",
        mh, mp, (mh > 0 ? mp / mh * 100 : 0), mq * 100, (mq >= 0.98 ? "met" : "not met")
      printf "CPU per request, platform / headless: %.2f (median of per-round ratios).\n", mu }' "$CSV"
  echo "volley CPU s: headless = user+sys of \`volley run\` (GNU time, start-up included); platform = the server process from"
  echo "just before POST …/runs to the status read after the viewers got the summary (/proc). other CPU = every other process"
  echo "over the run (foreign load; the viewers' own CPU is in it)."
  echo "Rejected tries (foreign load): $(($(wc -l < "$OUT-rejected.csv") - 1))."
} > "$OUT.md"
cat "$OUT.md"
echo "CSV: $CSV" >&2
