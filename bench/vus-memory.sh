#!/usr/bin/env bash
# bench/vus-memory.sh — Volley's memory with many VUs held open against slow targets.
#
# Starts TARGETS `volley target` processes on 127.0.0.1…127.0.0.TARGETS (port TARGET_PORT, pinned
# to SERVER_CPU), each answering /delay/DELAY_MS after DELAY_MS. Then, for each count in VUS, runs
# `volley run` (pinned to CLIENT_CPU) for DURATION seconds with a plan whose host maps to all
# target addresses (VU i dials address i mod TARGETS, so no address pair runs out of ports).
# Every VU holds one keep-alive connection and waits DELAY_MS per request.
#
# Reports per count: peak RSS (GNU time max RSS, and the summary's client.rss_bytes_max), RSS per VU
# (peak / VUs, and the marginal cost against the previous count), requests, errors and their kinds,
# and the targets: 10 000 VUs ≤ 300 MB, 50 000 VUs ≤ 1 GiB (1 MB = 10^6 bytes, 1 GiB = 2^30).
#
# Each VU needs one file descriptor: a count above the open-files hard limit (ulimit -Hn) cannot
# connect every VU (errors: too_many_open_files). When a count does not fit, the largest count that
# does (FIT_VUS, default: the limit minus 1 000, in thousands) is measured too, so the per-VU cost
# can be carried over.
#
#   bench/vus-memory.sh
#   VUS="1000 10000" DURATION=10 bench/vus-memory.sh
#
# Env: VUS ("10000 50000"), DURATION (20 s), DELAY_MS (1000), TARGETS (4), TARGET_PORT (19001),
#      CLIENT_CPU (0), SERVER_CPU (1), FIT_VUS (auto, 0 = off), PAUSE (3), QUIET_MAX, QUIET_TIMEOUT,
#      VOLLEY, RESULTS_DIR.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

VUS="${VUS:-10000 50000}"
DURATION="${DURATION:-20}"
DELAY_MS="${DELAY_MS:-1000}"
TARGETS="${TARGETS:-4}"
TARGET_PORT="${TARGET_PORT:-19001}"
PAUSE="${PAUSE:-3}"
[[ "$TARGETS" =~ ^[0-9]+$ && $TARGETS -ge 1 && $TARGETS -le 250 ]] || { echo "TARGETS must be 1..250" >&2; exit 2; }
[[ "$TARGET_PORT" =~ ^[0-9]+$ && "$DELAY_MS" =~ ^[0-9]+$ && "$DURATION" =~ ^[0-9]+$ ]] || { echo "bad numbers" >&2; exit 2; }

bench_prereqs
ensure_volley
raise_nofile
NOFILE="$(ulimit -n)"

max_vus=0
for v in $VUS; do (( v > max_vus )) && max_vus=$v; done
if [[ -z "${FIT_VUS:-}" ]]; then
  FIT_VUS=0
  if (( max_vus + 64 > NOFILE )); then FIT_VUS=$(( (NOFILE - 1000) / 1000 * 1000 )); fi
fi
LEVELS="$(for v in $VUS $([[ $FIT_VUS -gt 0 ]] && echo "$FIT_VUS"); do echo "$v"; done | sort -n | uniq | tr '\n' ' ')"

OUT="$RESULTS_DIR/vus-memory-$STAMP"
mkdir -p "$OUT"
CSV="$OUT.csv"

TARGET_PIDS=()
cleanup() {
  local p
  for p in "${TARGET_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${TARGET_PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

addrs=()
for i in $(seq 1 "$TARGETS"); do
  a="127.0.0.$i:$TARGET_PORT"
  taskset -c "$SERVER_CPU" "$VOLLEY" target --addr "$a" > "$OUT/target-$i.log" 2>&1 &
  TARGET_PIDS+=($!)
  addrs+=("$a")
done
for a in "${addrs[@]}"; do
  ok=0
  for _ in $(seq 50); do
    if curl -fs -o /dev/null --max-time 1 "http://$a/"; then ok=1; break; fi
    sleep 0.1
  done
  [[ $ok == 1 ]] || { echo "target $a did not come up (see $OUT/target-*.log)" >&2; exit 1; }
done
HOSTS="$(IFS=,; echo "${addrs[*]}")"

{
  echo "## vus-memory $STAMP"
  echo
  echo "- machine: $(machine_line); $(volley_version)"
  echo "- $TARGETS targets (\`volley target\`) on $HOSTS, answering after ${DELAY_MS} ms; volley on CPU $CLIENT_CPU, targets on CPU $SERVER_CPU"
  echo "- ${DURATION}s constant-vus per count; open-files limit $NOFILE"
  echo
  echo "| VUs | peak RSS MiB (time) | peak RSS MB | rss_bytes_max MiB | KiB per VU | marginal KiB per VU | requests | TPS | errors | error kinds | client CPU s | target |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
} > "$OUT.md"
echo "vus,duration_s,maxrss_kb,rss_bytes_max,kib_per_vu,marginal_kib_per_vu,requests,tps,errors,error_kinds,client_user_s,client_sys_s,wall_s,nofile,rc" > "$CSV"

prev_v=0; prev_kb=0; last_marg=""
for v in $LEVELS; do
  wait_quiet
  plan="$OUT/plan-$v.json"
  jq -n --arg url "http://slow.test:$TARGET_PORT/delay/$DELAY_MS" --argjson vus "$v" --arg dur "${DURATION}s" --arg hosts "$HOSTS" \
    '{name: "vus-memory", requests: [{url: $url}],
      load: {executor: "constant-vus", vus: $vus, duration: $dur},
      http: {timeout: "10s", hosts: {"slow.test": $hosts}}}' > "$plan"
  echo "run: $v VUs for ${DURATION}s" >&2
  timeout -k 5 $((DURATION + 90)) "$TIME_BIN" -o "$OUT/time-$v.txt" -f '%U %S %M %e' \
    taskset -c "$CLIENT_CPU" "$VOLLEY" run "$plan" --out "$OUT/summary-$v.json" -q > "$OUT/stdout-$v.txt" 2>&1
  rc=$?
  read -r us sy kb wall < <(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$OUT/time-$v.txt" | tail -n1 || echo "0 0 0 0")
  s="$OUT/summary-$v.json"
  req="$(jq -r '.requests // 0' "$s" 2>/dev/null || echo 0)"
  tps="$(jq -r '.rps // 0' "$s" 2>/dev/null || echo 0)"
  err="$(jq -r '.errors // 0' "$s" 2>/dev/null || echo 0)"
  kinds="$(jq -r '[.error_kinds // {} | to_entries[] | "\(.key)=\(.value)"] | join(" ")' "$s" 2>/dev/null)"
  rbm="$(jq -r '.client.rss_bytes_max // 0' "$s" 2>/dev/null || echo 0)"
  row="$(awk -v v="$v" -v kb="${kb:-0}" -v rbm="$rbm" -v pv="$prev_v" -v pkb="$prev_kb" -v req="$req" -v tps="$tps" -v err="$err" \
      -v kinds="$kinds" -v us="${us:-0}" -v sy="${sy:-0}" -v nofile="$NOFILE" 'BEGIN{
    perv = kb / v; marg = (pv > 0 && v > pv && v + 64 <= nofile) ? (kb - pkb) / (v - pv) : -1
    if (v == 10000) verdict = (kb * 1024 <= 300e6) ? "≤ 300 MB: met" : "≤ 300 MB: not met"
    else if (v == 50000) verdict = (kb * 1024 <= 1073741824 && err == 0) ? "≤ 1 GiB: met" : (v + 64 > nofile ? "not measurable: open-files limit " nofile : "≤ 1 GiB: not met")
    else verdict = "–"
    printf "| %d | %.1f | %.1f | %.1f | %.1f | %s | %d | %.0f | %d | %s | %.2f | %s |\n", v, kb/1024, kb*1024/1e6, rbm/1048576, perv,
      (marg < 0 ? "–" : sprintf("%.1f", marg)), req, tps, err, (kinds == "" ? "–" : kinds), us + sy, verdict }')"
  echo "$row" >> "$OUT.md"
  echo "$v,$DURATION,${kb:-0},$rbm,$(awk -v kb="${kb:-0}" -v v="$v" 'BEGIN{printf "%.2f", kb/v}'),$(awk -v kb="${kb:-0}" -v v="$v" -v pv="$prev_v" -v pkb="$prev_kb" -v nofile="$NOFILE" 'BEGIN{if (pv>0 && v+64<=nofile) printf "%.2f", (kb-pkb)/(v-pv); else printf "NA"}'),$req,$tps,$err,\"$kinds\",${us:-0},${sy:-0},${wall:-0},$NOFILE,$rc" >> "$CSV"
  echo "  $row" >&2
  if (( v + 64 <= NOFILE )); then
    (( prev_v > 0 )) && last_marg="$(awk -v kb="${kb:-0}" -v v="$v" -v pv="$prev_v" -v pkb="$prev_kb" 'BEGIN{printf "%.2f", (kb-pkb)/(v-pv)}')"
    prev_v=$v; prev_kb=${kb:-0}
  fi
  sleep "$PAUSE"
done

{
  echo
  echo "KiB per VU = peak RSS / VUs (includes the process's fixed ~40 MiB); marginal = RSS growth per added VU"
  echo "between consecutive counts that fit the open-files limit. Expected requests ≈ VUs × ${DURATION}s / ${DELAY_MS} ms."
  if (( FIT_VUS > 0 )); then
    echo "Open-files hard limit $NOFILE < $max_vus + 64: the largest count ($max_vus) cannot hold a connection per VU here;"
    echo "$FIT_VUS VUs were measured as the largest count that fits."
    if [[ -n "$last_marg" ]]; then
      awk -v kb="$prev_kb" -v v="$prev_v" -v m="$last_marg" -v big="$max_vus" 'BEGIN{
        e = (kb + (big - v) * m) * 1024
        printf "Carried over: %d VUs ≈ %.0f MiB + %d × %.1f KiB ≈ %.0f MiB (%s 1 GiB).\n", big, kb/1024, big - v, m, e/1048576, (e <= 1073741824 ? "under" : "over") }'
    fi
  fi
} >> "$OUT.md"
cat "$OUT.md"
echo "CSV: $CSV" >&2
