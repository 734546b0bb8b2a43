#!/usr/bin/env bash
# bench/scale.sh — the same load from one `volley run` and from 1, 2 and 3 `volley agent`s on this
# machine (issue 14: total CPU µs per request within 5 % of a single local run).
#
# Starts nginx as bench.sh does (bench/lib.sh: 1 worker pinned to SERVER_CPU, a 615-byte page on
# 127.0.0.1:PORT, plus its stub_status counter) and runs one plan — open model by default
# (constant-arrival-rate RATE/s for DURATION s, the same requests whoever sends them), or closed
# (MODEL=closed: constant-vus VUS) — in each configuration of CONFIGS:
#   local  `volley run plan.json`
#   N      `volley run --agents N --agents-listen 127.0.0.1:0 plan.json` (the controller with its
#          embedded broker) and N `volley agent --allow-target 127.0.0.1` joined with the printed token
# Every Volley process is pinned to CLIENT_CPU. Configurations alternate within a round; the order
# rotates each round, so each goes first once every len(CONFIGS) rounds and drift hits all of them.
#
# Per run: requests from the run's summary and from nginx's stub_status (cross-check), dropped
# iterations, errors; the CPU of every Volley process of the configuration — the controller
# (or the local run) from GNU time (its whole life, start-up included), each agent from
# /proc/PID/stat utime+stime when the controller exits (its whole life: start, join, idle, run) —
# and its part spent before the load starts (all processes sampled at "running over N agents");
# CPU µs per request = that total / summary requests; nginx's worker CPU and other processes' CPU
# (foreign load), and the load average. Agents and controllers are stopped by PID.
# Output: per-run rows and per-configuration medians with the ratio to `local` on stdout and in
# results/scale-STAMP.md, one CSV row per run in results/scale-STAMP.csv, logs in results/scale-STAMP/.
#
#   make bench-scale                                # ROUNDS=3, 10 s runs at 5 000/s
#   ROUNDS=1 DURATION=5 CONFIGS="local 2" bench/scale.sh
#   MODEL=closed VUS=30 bench/scale.sh
#
# Env: MODEL (open|closed), RATE (5000 /s), PRE_VUS (50), MAX_VUS (1000), VUS (closed model: 30),
#      DURATION (10; "10s" is accepted), ROUNDS (3), CONFIGS ("local 1 2 3"), PAUSE (2), WARMUP (2),
#      QUIET_MAX (0.15 cores), QUIET_TIMEOUT (10 s: run anyway after it, the load is in the CSV),
#      AGENTS_WAIT (30 s), PORT (18088), CLIENT_CPU (0), SERVER_CPU (1), VOLLEY, RESULTS_DIR.
set -uo pipefail
QUIET_TIMEOUT="${QUIET_TIMEOUT:-10}"
source "$(dirname "$0")/lib.sh"

model_defaults
ROUNDS="${ROUNDS:-3}"
CONFIGS="${CONFIGS:-local 1 2 3}"
PAUSE="${PAUSE:-2}"
WARMUP="${WARMUP:-2}"
AGENTS_WAIT="${AGENTS_WAIT:-30}"
check_ints "$ROUNDS" "$PAUSE" "$WARMUP" "$AGENTS_WAIT"
for c in $CONFIGS; do
  [[ $c == local || ( "$c" =~ ^[0-9]+$ && $c -ge 1 && $c -le 8 ) ]] || { echo "CONFIGS: local or 1-8 agents, not $c" >&2; exit 2; }
done
read -ra CONF <<<"$CONFIGS"
URL="http://$HOST:$PORT/index.html"
KILL_AFTER=$((DURATION + AGENTS_WAIT + 60))   # hard wall-clock bound per run

bench_start scale   # OUT, CSV, MD, nginx, LOAD and $OUT/plan.json (lib.sh)

# wait_line FILE REGEX SECONDS PID: until FILE has a line matching REGEX (0), PID exits or time runs out (1).
wait_line() {
  local i
  for i in $(seq $(($3 * 20))); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || { grep -qE "$2" "$1" 2>/dev/null; return; }
    sleep 0.05
  done
  return 1
}

# volley_pid TIMEOUT_PID: the volley process under timeout > GNU time (taskset exec'd it), or 0.
volley_pid() {
  local t; t="$(pgrep -P "$1" | head -n1)"
  [[ -n "$t" ]] && t="$(pgrep -P "$t" | head -n1)"
  echo "${t:-0}"
}

# run_conf CONFIG ROUND -> one CSV row on stdout. The controller (or local run) runs under GNU time
# inside timeout; its volley process is time's child (taskset execs it).
run_conf() {
  local conf="$1" round="$2" base="$OUT/r$2-$1" tf rc tpid n=0 i
  tf="$base.time"
  local -a args=(run "$OUT/plan.json" --out "$base.summary.json" -q)
  [[ $conf != local ]] && { n=$conf; args+=(--agents "$n" --agents-listen "$HOST:0" --agents-wait "${AGENTS_WAIT}s"); }

  local wpid q0 q1 ng0 ng1 s0 s1 la setup_ticks=NA agents_ticks=0 skew=NA
  wpid="$(nginx_worker)" || { echo "nginx worker not found" >&2; return 1; }
  q0="$(nginx_requests)"; ng0="$(proc_ticks "$wpid")"; s0="$(sys_ticks)"
  la="$(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$KILL_AFTER" "$TIME_BIN" -o "$tf" -f '%U %S %M %e' \
    taskset -c "$CLIENT_CPU" "$VOLLEY" "${args[@]}" > "$base.log" 2>&1 &
  tpid=$!; PIDS+=("$tpid")
  local -a agents=()
  if (( n == 0 )); then   # the local run prints this line right before its engine starts
    wait_line "$base.log" '^running "' 30 "$tpid" && setup_ticks="$(proc_ticks "$(volley_pid "$tpid")")"
  else
    if wait_line "$base.log" 'VOLLEY_JOIN_TOKEN=' 30 "$tpid"; then
      local tok url
      tok="$(grep -oE 'VOLLEY_JOIN_TOKEN=[^ ]+' "$base.log" | head -n1 | cut -d= -f2-)"
      url="$(grep -oE 'nats://[^ ]+' "$base.log" | head -n1)"
      for i in $(seq "$n"); do
        VOLLEY_JOIN_TOKEN="$tok" taskset -c "$CLIENT_CPU" "$VOLLEY" agent --nats "$url" --id "scale-$i" \
          --allow-target "$HOST" > "$base.agent$i.log" 2>&1 &
        agents+=($!); PIDS+=($!)
      done
      # the load starts right after this line: what every process spent before it is set-up
      if wait_line "$base.log" '^running over [0-9]+ agents' $((AGENTS_WAIT + 10)) "$tpid"; then
        setup_ticks="$(proc_ticks "$(volley_pid "$tpid")")"
        for i in "${agents[@]}"; do setup_ticks=$((setup_ticks + $(proc_ticks "$i"))); done
      fi
    else
      echo "  no join line from the controller (see $base.log)" >&2
    fi
  fi
  wait "$tpid"; rc=$?
  for i in "${agents[@]}"; do agents_ticks=$((agents_ticks + $(proc_ticks "$i"))); done
  ng1="$(proc_ticks "$wpid")"; s1="$(sys_ticks)"; q1="$(nginx_requests)"
  for i in "${agents[@]}"; do stop_pid "$i"; done
  local tline vals
  tline="$(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$tf" 2>/dev/null | tail -n1)"
  vals="$(jq -r '[.requests, .dropped_iterations // 0, .errors, .latency_ms.p99, .start_skew_ms // "NA"] | map(tostring) | join(" ")' \
    "$base.summary.json" 2>/dev/null || echo "0 0 0 NA NA")"
  awk -v conf="$conf" -v round="$round" -v vals="$vals" -v tline="${tline:-0 0 0 0}" -v at="$agents_ticks" \
      -v st="$setup_ticks" -v q0="$q0" -v q1="$q1" -v ng="$((ng1 - ng0))" -v a="$s0" -v b="$s1" -v hz="$CLK_TCK" \
      -v rc="$rc" -v la="$la" 'BEGIN{
    split(vals, v, " "); split(tline, t, " "); split(a, x, " "); split(b, y, " ")
    req = v[1]; ctl = t[1] + t[2]; ag = at / hz; tot = ctl + ag
    upr = (req > 0) ? tot / req * 1e6 : 0
    nreq = q1 - q0 - 1                     # the second status request counts itself
    setup = (st == "NA") ? "NA" : sprintf("%.2f", st / hz)
    rupr = (st == "NA" || req == 0) ? "NA" : sprintf("%.1f", (tot - st / hz) / req * 1e6)
    other = (y[2] - x[2]) / hz - tot - ng / hz; if (other < 0) other = 0
    printf "%s,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f,%s,%.2f,%s,%.2f,%.2f,%.2f,%s,%s,%d\n", conf, round, req, nreq, v[2], v[3], v[4],
      ctl, ag, tot, setup, upr, rupr, ng / hz, t[4], other, la, v[5], rc }'
}

CSV_HEADER="config,round,requests,nginx_requests,dropped,errors,p99_ms,controller_cpu_s,agents_cpu_s,total_cpu_s,setup_cpu_s,cpu_us_per_req,run_us_per_req,nginx_cpu_s,wall_s,other_cpu_s,loadavg1,start_skew_ms,rc"
echo "$CSV_HEADER" > "$CSV"

{
  echo "## scale $STAMP"
  echo
  echo "- machine: $(machine_line); $(volley_version); load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- GET $URL, nginx $(nginx_version) 1 worker on CPU $SERVER_CPU; every Volley process on CPU $CLIENT_CPU"
  echo "- $LOAD_TEXT; rounds $ROUNDS, configurations (rotating order): $CONFIGS"
  echo
  echo "| round | config | requests | nginx | dropped | errors | p99 ms | controller CPU s | agents CPU s | total CPU s | of it set-up s | CPU µs/req | without set-up | nginx CPU s | other CPU s | load avg | rc |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} > "$MD"

volley_warmup "$OUT"

md_row() {  # one CSV row on stdin -> its Markdown table line
  awk -F, '{printf "| %d | %s | %d | %d | %d | %d | %s | %.2f | %.2f | %.2f | %s | %.1f | %s | %.2f | %.2f | %s | %d |\n",
    $2, $1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $17, $19}'
}
rotating_rounds

{
  echo
  echo "| config | runs | CPU µs/req | ratio to local | per-round ratios (median) | without set-up µs/req | ratio | controller CPU s | agents CPU s | set-up CPU s | dropped | requests = nginx |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  awk -F, -v order="$CONFIGS" '
    function median(arr, n,   i, j, t, a) {
      for (i = 1; i <= n; i++) a[i] = arr[i]
      for (i = 2; i <= n; i++) { t = a[i]; j = i - 1; while (j > 0 && a[j] > t) { a[j+1] = a[j]; j-- } a[j+1] = t }
      return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
    function med(c, col,   k, x) { for (k = 1; k <= n[c]; k++) x[k] = v[c, k, col]; return median(x, n[c]) }
    $1 == "config" || $19 != 0 { next }
    { c = $1; n[c]++; for (f = 1; f <= NF; f++) v[c, n[c], f] = $f; per[$2, c] = $12
      if ($3 != $4) bad[c]++; rounds[$2] = 1 }
    END {
      m = split(order, cs, " ")
      if (n["local"]) { L = med("local", 12); LR = med("local", 13) }
      for (i = 1; i <= m; i++) { c = cs[i]; if (!n[c]) continue
        r = 0; for (rd in rounds) if ((rd, c) in per && (rd, "local") in per && per[rd, "local"] > 0) rr[++r] = per[rd, c] / per[rd, "local"]
        u = med(c, 12); ur = med(c, 13)
        printf "| %s | %d | %.1f | %s | %s | %.1f | %s | %.2f | %.2f | %.2f | %d | %s |\n", (c == "local" ? "local" : c " agents"), n[c],
          u, (L > 0 ? sprintf("%.3f", u / L) : "NA"), (r > 0 ? sprintf("%.3f", median(rr, r)) : "NA"),
          ur, (LR > 0 ? sprintf("%.3f", ur / LR) : "NA"), med(c, 8), med(c, 9), med(c, 11), med(c, 5),
          (bad[c] ? bad[c] " runs differ" : "yes") }
    }' "$CSV"
  echo
  echo "Medians over the rounds (runs that exited non-zero left out). CPU = user+sys of the controller or local run (GNU time)"
  echo "+ each agent's utime+stime (/proc), over each process's whole life; set-up = what the configuration's processes had used"
  echo "when the load started (start-up, broker, join); without set-up = (CPU − set-up) / requests. nginx = requests counted by"
  echo "its stub_status. other CPU = every other process during the run (foreign load); load avg = 1-minute load average at its start."
} >> "$MD"
cat "$MD"
echo "CSV: $CSV" >&2
