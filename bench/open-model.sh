#!/usr/bin/env bash
# bench/open-model.sh — Volley's open model (constant-arrival-rate) against nginx: does it send at the
# asked rate, on time, and what is the highest rate this machine sustains?
#
# Starts nginx as bench.sh does (1 worker on SERVER_CPU, 615-byte page on 127.0.0.1:PORT) and runs
# `volley run` pinned to CLIENT_CPU for DURATION seconds at each rate in RATES, then searches upward
# from SEARCH_FROM in steps of SEARCH_STEP until a rate fails (or SEARCH_MAX), then bisects between
# the last pass and the first failure REFINE times. A rate passes when
#   achieved = requests / duration is within TOLERANCE (1%) of the asked rate, dropped_iterations = 0
#   and errors = 0.
# The lag target (schedule_lag_ms.p99 < 1 ms) is reported beside it, not part of "sustained".
#
# Per rate: achieved rate, send_rate, dropped iterations, errors, schedule-lag p50/p99, latency
# p50/p99, generator CPU (GNU time user+sys, and as % of one core), nginx CPU, max RSS.
#
#   bench/open-model.sh
#   RATES="1000 10000" SEARCH_FROM=0 bench/open-model.sh     # only the fixed rates
#
# Env: RATES ("1000 10000"), SEARCH_FROM (20000; 0 = no search), SEARCH_STEP (20000), SEARCH_MAX (300000),
#      REFINE (2), TOLERANCE (0.01), RETRIES (1: a failed rate is tried again this many times),
#      DURATION (10), PRE_VUS (50), MAX_VUS (1000), PORT (18088),
#      CLIENT_CPU (0), SERVER_CPU (1), PAUSE (2), QUIET_MAX, QUIET_TIMEOUT, VOLLEY, RESULTS_DIR.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

RATES="${RATES:-1000 10000}"
SEARCH_FROM="${SEARCH_FROM:-20000}"
SEARCH_STEP="${SEARCH_STEP:-20000}"
SEARCH_MAX="${SEARCH_MAX:-300000}"
REFINE="${REFINE:-2}"
TOLERANCE="${TOLERANCE:-0.01}"
DURATION="${DURATION:-10}"
PRE_VUS="${PRE_VUS:-50}"
MAX_VUS="${MAX_VUS:-1000}"
PAUSE="${PAUSE:-2}"
RETRIES="${RETRIES:-1}"
URL="http://$HOST:$PORT/index.html"
check_ints $RATES "$SEARCH_FROM" "$SEARCH_STEP" "$SEARCH_MAX" "$REFINE" "$RETRIES" "$DURATION" "$PRE_VUS" "$MAX_VUS"

bench_prereqs
ensure_volley
raise_nofile
OUT="$RESULTS_DIR/open-model-$STAMP"
mkdir -p "$OUT"
CSV="$OUT.csv"
trap nginx_stop EXIT
trap 'exit 130' INT TERM
nginx_start

{
  echo "## open-model $STAMP"
  echo
  echo "- machine: $(machine_line); $(volley_version)"
  echo "- GET $URL, nginx $(nginx_version) 1 worker on CPU $SERVER_CPU; volley on CPU $CLIENT_CPU"
  echo "- constant-arrival-rate, ${DURATION}s per rate, pre_allocated_vus $PRE_VUS, max_vus $MAX_VUS; pass = within $(awk -v t="$TOLERANCE" 'BEGIN{print t*100}')% of the asked rate, 0 dropped, 0 errors"
  echo
  echo "| asked /s | achieved /s | send_rate /s | within | dropped | errors | lag p50 ms | lag p99 ms | latency p50 ms | latency p99 ms | generator CPU s | generator CPU % | nginx CPU s | max RSS MiB | other CPU s | result |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$OUT.md"
echo "rate,achieved,send_rate,deviation,dropped,errors,lag_p50_ms,lag_p99_ms,p50_ms,p99_ms,client_cpu_s,client_cpu_pct,nginx_cpu_s,maxrss_kb,pass,rc,other_cpu_s" > "$CSV"

# run_rate R: one run; returns 0 when it passes
run_rate() {
  local r="$1" plan s tf rc wpid n0 n1 s0 s1
  wait_quiet
  plan="$OUT/plan-$r.json"; s="$OUT/summary-$r.json"; tf="$OUT/time-$r.txt"
  jq -n --arg url "$URL" --argjson rate "$r" --arg dur "${DURATION}s" --argjson pre "$PRE_VUS" --argjson max "$MAX_VUS" \
    '{name: "open-model", requests: [{url: $url}],
      load: {executor: "constant-arrival-rate", rate: $rate, duration: $dur, pre_allocated_vus: $pre, max_vus: $max},
      http: {timeout: "10s"}}' > "$plan"
  echo "run: $r/s for ${DURATION}s" >&2
  wpid="$(nginx_worker)"; n0="$(proc_ticks "$wpid")"; s0="$(sys_ticks)"
  timeout -k 5 $((DURATION + 60)) "$TIME_BIN" -o "$tf" -f '%U %S %M %e' \
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "$plan" --out "$s" -q > "$OUT/stdout-$r.txt" 2>&1
  rc=$?
  n1="$(proc_ticks "$wpid")"; s1="$(sys_ticks)"
  local tline; tline="$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$tf" | tail -n1)"
  local vals
  vals="$(jq -r '[.requests, .duration_s, .send_rate, .dropped_iterations, .errors, .schedule_lag_ms.p50, .schedule_lag_ms.p99,
                  .latency_ms.p50, .latency_ms.p99] | map(tostring) | join(" ")' "$s" 2>/dev/null || echo "0 0 0 0 0 0 0 0 0")"
  local line
  line="$(awk -v r="$r" -v vals="$vals" -v tline="${tline:-0 0 0 0}" -v dur="$DURATION" -v tol="$TOLERANCE" \
      -v ng="$(( n1 - n0 ))" -v hz="$CLK_TCK" -v rc="$rc" -v s0="$s0" -v s1="$s1" 'BEGIN{
    split(vals, v, " "); split(tline, t, " "); split(s0, a, " "); split(s1, b, " ")
    ach = v[1] / dur; dev = (ach - r) / r; ad = dev < 0 ? -dev : dev
    cpu = t[1] + t[2]; pct = (t[4] > 0) ? cpu / t[4] * 100 : 0
    pass = (ad <= tol && v[4] == 0 && v[5] == 0) ? 1 : 0
    other = (b[2] - a[2]) / hz - cpu - ng / hz; if (other < 0) other = 0
    printf "%d %.1f %.1f %.4f %d %d %s %s %s %s %.2f %.0f %.2f %d %d %d %.2f\n", r, ach, v[3], dev, v[4], v[5], v[6], v[7], v[8], v[9], cpu, pct, ng/hz, t[3], pass, rc, other }')"
  echo "${line// /,}" >> "$CSV"
  awk -v l="$line" 'BEGIN{ split(l, f, " ")
    printf "| %d | %.0f | %.0f | %+.2f%% | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f | %d | %.2f | %.1f | %.2f | %s |\n",
      f[1], f[2], f[3], f[4]*100, f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14]/1024, f[17], (f[15] ? "sustained" : "not sustained") }' | tee -a "$OUT.md" >&2
  sleep "$PAUSE"
  [[ "$(awk '{print $15}' <<<"$line")" == 1 ]]
}

# try_rate R: a failed rate is run again up to RETRIES times (foreign load on a shared machine can
# stall the generator for 10 ms and drop iterations; it cannot make a rate pass that does not)
try_rate() {
  local a
  for a in $(seq 0 "$RETRIES"); do
    run_rate "$1" && return 0
    (( a < RETRIES )) && echo "  $1/s not sustained; trying again" >&2
  done
  return 1
}

best=0
for r in $RATES; do
  if try_rate "$r" && (( r > best )); then best=$r; fi
done
if (( SEARCH_FROM > 0 )); then
  fail=0; r=$SEARCH_FROM
  while (( r <= SEARCH_MAX )); do
    if try_rate "$r"; then (( r > best )) && best=$r; r=$((r + SEARCH_STEP)); else fail=$r; break; fi
  done
  lo=$best; hi=$fail
  for _ in $(seq "$REFINE"); do
    (( hi > 0 && hi - lo > 1000 )) || break
    mid=$(( (lo + hi) / 2 / 1000 * 1000 ))
    (( mid > lo )) || break
    if try_rate "$mid"; then lo=$mid; (( mid > best )) && best=$mid; else hi=$mid; fi
  done
fi
{
  echo
  echo "Highest sustained rate: ${best}/s (achieved within $(awk -v t="$TOLERANCE" 'BEGIN{print t*100}')%, no dropped iterations, no errors)."
  echo "Lag = actual − scheduled start of an iteration (summary schedule_lag_ms); generator CPU % is of one core;"
  echo "other CPU = all other processes during the run (foreign load on this machine)."
} >> "$OUT.md"
cat "$OUT.md"
echo "CSV: $CSV" >&2
