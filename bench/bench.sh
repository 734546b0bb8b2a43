#!/usr/bin/env bash
# bench/bench.sh — Volley against wrk, bombardier (and vegeta, hey when installed) on one nginx.
#
# Starts its own nginx (1 worker pinned to SERVER_CPU, a 615-byte page at /index.html on
# 127.0.0.1:PORT, keep-alive, access_log off) and runs every tool pinned with taskset to CLIENT_CPU,
# closed model (C connections, each sends its next request when the last one is answered), for the
# same DURATION at each concurrency. Loop order is round > concurrency > tool, so the tools alternate.
# Before each run it waits for a quiet machine; a run during which other processes used more than
# MAX_OTHER cores is rejected and retried (rejected tries go to *-rejected.csv).
#
# Per run: requests, TPS, p50/p99 as each tool reports them, errors, client user+sys CPU and max RSS
# (GNU time), CPU µs per request, the nginx worker's CPU seconds (/proc), softirq and other CPU.
# Output: the tables on stdout and in results/bench-STAMP.md, one CSV row per run in
# results/bench-STAMP.csv, raw tool output in results/raw-bench-STAMP/. bench/table.sh re-renders.
#
#   make bench                                     # 1 round, all levels (~5 min with 3 tools)
#   ROUNDS=3 bench/bench.sh                        # the published table
#   DURATION=5 CONCURRENCY="10 100" TOOLS="volley wrk" bench/bench.sh
#
# Env knobs:
#   DURATION      seconds per run (10)
#   CONCURRENCY   concurrency levels ("10 50 100 500 1000")
#   TOOLS         order/subset of: volley wrk bombardier vegeta hey (all; missing tools are skipped)
#   ROUNDS        repetitions of the whole matrix (1)
#   PORT          nginx port on 127.0.0.1 (18088); URL_PATH (/index.html)
#   CLIENT_CPU    core for the load generator (0); SERVER_CPU core for nginx (1)
#   PAUSE         idle seconds between runs (2); WARMUP seconds of unrecorded load first (2)
#   QUIET_MAX     wait before a run until all processes use ≤ this many cores (0.15)
#   QUIET_TIMEOUT run anyway after waiting this long, in s (180)
#   MAX_OTHER     reject a run if other processes used more than this many cores on average (0.10)
#   RETRIES       retries of a rejected run (2; the last try is kept)
#   LABEL         results file prefix (bench); RESULTS_DIR (bench/results)
#   VOLLEY WRK BOMBARDIER VEGETA HEY   binaries (bin/volley, else from PATH or ~/go/bin)
set -uo pipefail
source "$(dirname "$0")/lib.sh"

URL_PATH="${URL_PATH:-/index.html}"
[[ "$URL_PATH" == /* && "$URL_PATH" != *[[:space:]@]* ]] || { echo "bad URL_PATH" >&2; exit 2; }
URL="http://$HOST:$PORT$URL_PATH"
DURATION="${DURATION:-10}"
CONCURRENCY="${CONCURRENCY:-10 50 100 500 1000}"
TOOLS="${TOOLS:-volley wrk bombardier vegeta hey}"
ROUNDS="${ROUNDS:-1}"
PAUSE="${PAUSE:-2}"
WARMUP="${WARMUP:-2}"
MAX_OTHER="${MAX_OTHER:-0.10}"
RETRIES="${RETRIES:-2}"
LABEL="${LABEL:-bench}"
[[ "$DURATION" =~ ^[0-9]+$ && "$ROUNDS" =~ ^[0-9]+$ ]] || { echo "DURATION and ROUNDS must be integers" >&2; exit 2; }
KILL_AFTER=$((DURATION + 60))        # hard wall-clock bound per run

gobin() { local p; p="$(command -v "$1" || true)"; [[ -z "$p" && -x "$(go env GOPATH 2>/dev/null)/bin/$1" ]] && p="$(go env GOPATH)/bin/$1"; echo "$p"; }
WRK="${WRK:-$(command -v wrk || true)}"
BOMBARDIER="${BOMBARDIER:-$(gobin bombardier)}"
VEGETA="${VEGETA:-$(gobin vegeta)}"
HEY="${HEY:-$(gobin hey)}"

bench_prereqs
ensure_volley
raise_nofile

RAW="$RESULTS_DIR/raw-$LABEL-$STAMP"
CSV="$RESULTS_DIR/$LABEL-$STAMP.csv"
REJ="$RESULTS_DIR/$LABEL-$STAMP-rejected.csv"
MD="$RESULTS_DIR/$LABEL-$STAMP.md"
mkdir -p "$RAW"
SCRATCH="$(mktemp -d /tmp/volley-bench.XXXXXX)"

cleanup() { rm -rf "$SCRATCH"; nginx_stop; }
trap cleanup EXIT
trap 'exit 130' INT TERM
nginx_start

tool_bin() {
  case "$1" in
    volley) echo "$VOLLEY" ;; wrk) echo "$WRK" ;; bombardier) echo "$BOMBARDIER" ;;
    vegeta) echo "$VEGETA" ;; hey) echo "$HEY" ;; *) echo "" ;;
  esac
}

tool_version() {
  case "$1" in
    volley) volley_version ;;
    wrk) "$WRK" -v 2>&1 | head -n1 | awk '{print $1, $2}' ;;
    *) go_bin_version "$(tool_bin "$1")" ;;
  esac
}

to_ms() {  # "231.00us" / "1.65ms" / "2.1s" / "1m" -> milliseconds
  awk -v v="$1" 'BEGIN{
    if (v ~ /us$/) { sub(/us$/,"",v); printf "%.3f", v/1000 }
    else if (v ~ /ms$/) { sub(/ms$/,"",v); printf "%.3f", v }
    else if (v ~ /m$/)  { sub(/m$/,"",v);  printf "%.3f", v*60000 }
    else if (v ~ /s$/)  { sub(/s$/,"",v);  printf "%.3f", v*1000 }
    else printf "NA" }'
}

# Each parser prints: requests elapsed_s p50_ms p99_ms errors heap_allocs_per_request
parse_volley() {
  jq -r '[.requests, .duration_s, .latency_ms.p50, .latency_ms.p99, .errors,
          (.client.heap_allocs_per_request // "NA")] | map(tostring) | join(" ")' "$1" 2>/dev/null || echo "0 0 NA NA 0 NA"
}

parse_wrk() {
  local f="$1" req el p50 p99 err
  req="$(awk '/ requests in /{print $1; exit}' "$f")"
  el="$(awk '/ requests in /{v=$4; sub(/,$/,"",v); print v; exit}' "$f")"
  el="$(awk -v ms="$(to_ms "$el")" 'BEGIN{printf "%.3f", ms/1000}')"
  p50="$(to_ms "$(awk '/Latency Distribution/{d=1} d&&$1=="50%"{print $2; exit}' "$f")")"
  p99="$(to_ms "$(awk '/Latency Distribution/{d=1} d&&$1=="99%"{print $2; exit}' "$f")")"
  err="$(awk '/Socket errors:/{gsub(/,/,""); s+=$4+$6+$8+$10} /Non-2xx or 3xx responses:/{s+=$NF} END{print s+0}' "$f")"
  echo "${req:-0} ${el:-0} $p50 $p99 $err NA"
}

parse_bombardier() {  # -o j: counts per status class, latency percentiles in µs
  jq -r '.result as $r | [($r.req1xx+$r.req2xx+$r.req3xx+$r.req4xx+$r.req5xx+$r.others), $r.timeTakenSeconds,
          ($r.latency.percentiles["50"] / 1000), ($r.latency.percentiles["99"] / 1000),
          ($r.req1xx+$r.req3xx+$r.req4xx+$r.req5xx+$r.others), "NA"] | map(tostring) | join(" ")' "$1" 2>/dev/null \
    || echo "0 0 NA NA 0 NA"
}

parse_vegeta() {  # vegeta report -type=json: durations in ns
  jq -r '[.requests, ((.duration + .wait) / 1e9), (.latencies["50th"] / 1e6), (.latencies["99th"] / 1e6),
          (.requests - ([.status_codes | to_entries[] | select(.key | startswith("2")) | .value] | add // 0)), "NA"]
          | map(tostring) | join(" ")' "$1" 2>/dev/null || echo "0 0 NA NA 0 NA"
}

parse_hey() {
  awk '
    /^ *Total:/ && !el {el=$2}
    /^ *50%+ in/ {p50=$3*1000}
    /^ *99%+ in/ {p99=$3*1000}
    /Status code distribution:/ {sec="code"; next}
    /Error distribution:/ {sec="err"; next}
    sec=="code" && /^ *\[[0-9]+\]/ { c=$1; gsub(/[^0-9]/,"",c); n+=$2; if (c !~ /^2/) e+=$2 }
    sec=="err"  && /^ *\[[0-9]+\]/ { x=$1; gsub(/[^0-9]/,"",x); n+=x; e+=x }
    END { printf "%d %.3f %.3f %.3f %d NA\n", n, el, p50, p99, e }' "$1"
}

CSV_HEADER="label,round,tool,concurrency,duration_s,requests,elapsed_s,tps,p50_ms,p99_ms,errors,client_user_s,client_sys_s,client_cpu_s,client_wall_s,client_maxrss_kb,cpu_us_per_req,nginx_cpu_s,nginx_us_per_req,softirq_s,other_cpu_s,steal_s,client_core_busy,server_core_busy,heap_allocs_per_req,attempt,rc"
echo "$CSV_HEADER" > "$CSV"
echo "$CSV_HEADER" > "$REJ"

run_one() {  # tool C round attempt -> one CSV row in $ROWFILE
  local tool="$1" c="$2" round="$3" attempt="$4" bin base out tf rc
  bin="$(tool_bin "$tool")"
  base="$RAW/$tool-c$c-r$round-a$attempt"
  out="$base.out"; tf="$base.time"
  local -a cmd
  case "$tool" in
    volley) volley_plan "$base.plan.json" "$URL" "$c" "$DURATION"
            cmd=("$bin" run "$base.plan.json" --out "$out" -q) ;;
    wrk) cmd=("$bin" -t1 -c"$c" -d"${DURATION}s" --latency "$URL") ;;
    bombardier) cmd=("$bin" -c "$c" -d "${DURATION}s" -l -p r -o j "$URL") ;;
    vegeta) cmd=("$bin" attack -rate=0 -workers="$c" -max-workers="$c" -keepalive=true -duration="${DURATION}s") ;;
    hey) cmd=("$bin" -z "${DURATION}s" -c "$c" "$URL") ;;
  esac

  local wpid n0 n1 s0 s1 w0 w1
  wpid="$(nginx_worker)" || { echo "nginx worker not found" >&2; return 1; }
  w0="$(date +%s.%N)"; n0="$(proc_ticks "$wpid")"; s0="$(sys_ticks)"
  if [[ $tool == vegeta ]]; then
    printf 'GET %s\n' "$URL" | timeout -k 5 "$KILL_AFTER" "$TIME_BIN" -o "$tf" -f '%U %S %M %e' \
      taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$SCRATCH/vegeta.bin" 2> "$base.err"
    rc=$?
  else
    timeout -k 5 "$KILL_AFTER" "$TIME_BIN" -o "$tf" -f '%U %S %M %e' \
      taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$base.stdout" 2> "$base.err"
    rc=$?
    [[ $tool == volley ]] || mv "$base.stdout" "$out"
  fi
  n1="$(proc_ticks "$wpid")"; s1="$(sys_ticks)"; w1="$(date +%s.%N)"
  if [[ $tool == vegeta ]]; then   # decoded afterwards, outside the measured process
    "$bin" report -type=json < "$SCRATCH/vegeta.bin" > "$out" 2>> "$base.err"
    rm -f "$SCRATCH/vegeta.bin"
  fi

  local parsed tline
  parsed="$("parse_$tool" "$out")"
  tline="$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$tf" 2>/dev/null | tail -n1)"
  [[ -n "$tline" ]] || tline="0 0 0 0"

  awk -v label="$LABEL" -v round="$round" -v tool="$tool" -v c="$c" -v d="$DURATION" \
      -v parsed="$parsed" -v tline="$tline" -v n0="$n0" -v n1="$n1" -v s0="$s0" -v s1="$s1" \
      -v hz="$CLK_TCK" -v rc="$rc" -v attempt="$attempt" -v w0="$w0" -v w1="$w1" 'BEGIN{
    split(parsed, p, " "); split(tline, t, " "); split(s0, a, " "); split(s1, b, " ")
    req=p[1]; el=p[2]; p50=p[3]; p99=p[4]; err=p[5]; allocs=p[6]
    us=t[1]; sy=t[2]; rss=t[3]; wall=t[4]; cpu=us+sy
    tps = (el>0) ? req/el : 0
    upr = (req>0) ? cpu/req*1e6 : 0
    ng = (n1-n0)/hz; nupr = (req>0) ? ng/req*1e6 : 0
    procs = (b[2]-a[2])/hz; si = (b[3]-a[3])/hz; steal = (b[4]-a[4])/hz
    other = procs - cpu - ng; if (other < 0) other = 0
    win = w1 - w0
    cb = (win>0) ? (b[5]-a[5])/hz/win : 0; sb = (win>0) ? (b[6]-a[6])/hz/win : 0
    if (p50 != "NA") p50 = sprintf("%.3f", p50); if (p99 != "NA") p99 = sprintf("%.3f", p99)
    if (allocs != "NA") allocs = sprintf("%.4f", allocs)
    printf "%s,%d,%s,%d,%s,%d,%.3f,%.0f,%s,%s,%d,%.2f,%.2f,%.2f,%.2f,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%s,%d,%d\n",
      label, round, tool, c, d, req, el, tps, p50, p99, err, us, sy, cpu, wall, rss, upr, ng, nupr, si, other, steal, cb, sb, allocs, attempt, rc
  }' > "$ROWFILE"
}

run_clean() {  # tool C round: quiet gate, run, reject + retry when foreign load leaked in
  local tool="$1" c="$2" round="$3" attempt row other wall
  ROWFILE="$SCRATCH/row"
  for attempt in $(seq 1 $((RETRIES + 1))); do
    wait_quiet
    run_one "$tool" "$c" "$round" "$attempt" || return 1
    row="$(cat "$ROWFILE")"
    other="$(cut -d, -f21 <<<"$row")"; wall="$(cut -d, -f15 <<<"$row")"
    if awk -v o="$other" -v w="$wall" -v m="$MAX_OTHER" 'BEGIN{exit !(w>0 && o/w<=m)}' || (( attempt > RETRIES )); then
      echo "$row" >> "$CSV"; echo "  $row" >&2
      return 0
    fi
    echo "$row" >> "$REJ"
    echo "  rejected (other processes used ${other}s CPU in ${wall}s): $row" >&2
    sleep "$PAUSE"
  done
}

present=()
for t in $TOOLS; do
  b="$(tool_bin "$t")"
  if [[ -n "$b" && -x "$b" ]]; then present+=("$t"); else echo "skip $t: not installed (set ${t^^}= or put it on PATH)" >&2; fi
done
[[ ${#present[@]} -gt 0 ]] || { echo "no tools found" >&2; exit 1; }

{
  echo "## $LABEL $STAMP"
  echo
  echo "- machine: $(machine_line)"
  echo "- target: GET $URL (615-byte page), nginx $(nginx_version), 1 worker on CPU $SERVER_CPU; load generators on CPU $CLIENT_CPU"
  echo "- closed model, keep-alive, ${DURATION}s per run, rounds $ROUNDS, concurrency: $CONCURRENCY"
  echo "- quiet gate: ≤ $QUIET_MAX busy cores before a run; a run is rejected when others used > $MAX_OTHER cores during it (retries $RETRIES)"
  for t in "${present[@]}"; do echo "- $t: $(tool_version "$t")"; done
  echo
} > "$MD"

volley_warmup "$SCRATCH"

for round in $(seq "$ROUNDS"); do
  for c in $CONCURRENCY; do
    for t in "${present[@]}"; do
      echo "run: round=$round tool=$t C=$c ${DURATION}s" >&2
      run_clean "$t" "$c" "$round"
      sleep "$PAUSE"
    done
  done
done

"$BENCH_DIR/table.sh" "$CSV" >> "$MD"
{
  echo
  echo "TPS = requests / the tool's elapsed time. Client CPU = user+sys of the tool's process (GNU time), µs/req = that / requests;"
  echo "client RSS = its max RSS. nginx CPU = the worker's utime+stime over the run. Latency as each tool reports it."
  echo "other CPU = all other processes during the run (foreign load). Rejected tries: $(($(wc -l < "$REJ") - 1)) ($(basename "$REJ"))."
} >> "$MD"
cat "$MD"
echo
echo "CSV: $CSV" >&2
echo "MD:  $MD" >&2
