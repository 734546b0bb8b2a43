#!/usr/bin/env bash
# Runs `make test` N times in a row beside `stress-ng --cpu 2` (two CPU hogs competing with the
# tests for the cores), then prints a pass/fail tally; exits 1 if any run failed. The check that
# the tests hold on a busy machine: every timing-sensitive test uses testing/synctest, a fake
# clock, or margins from the scheduling delay it measures (testutil.SchedProbe).
#
#   scripts/stress-test.sh [N]         (default 5; or `make test-stress N=5`)
#
# Environment: STRESS_CPUS (stress-ng --cpu, default 2), STRESS_LOGS (where each run's log goes,
# default tmp/stress-test), MAKE_TEST (the command, default "make test"). Needs stress-ng
# (Debian: apt-get install stress-ng). stress-ng is stopped (by its PID) on any exit.
set -euo pipefail

n=${1:-5}
case $n in '' | *[!0-9]* | 0) echo "usage: $0 [N ≥ 1]" >&2; exit 2 ;; esac
cpus=${STRESS_CPUS:-2}
cmd=${MAKE_TEST:-make test}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
logs=${STRESS_LOGS:-tmp/stress-test}
mkdir -p "$logs"
command -v stress-ng >/dev/null || { echo "stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }

# stress-ng runs for as long as the script: started with no time limit, stopped on exit.
stress-ng --cpu "$cpus" --quiet &
stress_pid=$!
stop_stress() {
  if kill -0 "$stress_pid" 2>/dev/null; then
    kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
  fi
}
trap stop_stress EXIT
trap 'exit 130' INT TERM
echo "stress-ng --cpu $cpus running as PID $stress_pid; $n × $cmd (logs in $logs/)"

passed=0 failed=0 results=()
for i in $(seq 1 "$n"); do
  log="$logs/run-$i.log"
  start=$(date +%s)
  status=0
  $cmd >"$log" 2>&1 || status=$?
  took=$(( $(date +%s) - start ))
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1)); results+=("run $i: pass (${took}s)")
  else
    failed=$((failed + 1)); results+=("run $i: FAIL, exit $status (${took}s; $log)")
    # the failing tests, first: go test's --- FAIL lines and vitest's ✗/FAIL lines
    grep -E '^(\s*--- FAIL|FAIL|.*(✗|×) )' "$log" | head -20 | sed 's/^/    /' || true
  fi
  echo "${results[-1]}  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
done

echo "---- stress test: $passed of $n passed, $failed failed (stress-ng --cpu $cpus beside) ----"
printf '%s\n' "${results[@]}"
[ "$failed" -eq 0 ]
