#!/usr/bin/env bash
# bench/profile.sh — CPU profile of the engine's request path.
#
# Runs BenchmarkEngineRequest (the whole engine: VU loop, fasthttp client, classification,
# recording, against an in-process fasthttp server on loopback) with -cpuprofile and prints
# `go tool pprof -top` flat and cumulative views. The target server runs in the same process, so
# its functions appear in the profile too (fasthttp.(*Server)…, workerPool); the last view keeps
# only the VU goroutines, i.e. the client's own per-request costs.
#
#   bench/profile.sh
#   BENCH='EngineRequest/vus=100' BENCHTIME=3s bench/profile.sh
#
# Env: BENCH (EngineRequest), BENCHTIME (2s), COUNT (1), TOP (25), RESULTS_DIR.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

BENCH="${BENCH:-EngineRequest}"
BENCHTIME="${BENCHTIME:-2s}"
COUNT="${COUNT:-1}"
TOP="${TOP:-25}"
mkdir -p "$RESULTS_DIR"
OUT="$RESULTS_DIR/profile-$STAMP"
mkdir -p "$OUT"

cd "$ROOT"
go test -run '^$' -bench "$BENCH" -benchmem -benchtime "$BENCHTIME" -count "$COUNT" \
  -cpuprofile "$OUT/cpu.out" -o "$OUT/engine.test" ./backend/internal/engine/ | tee "$OUT/bench.txt" || exit 1
{
  echo "## flat"
  go tool pprof -top -nodecount="$TOP" "$OUT/engine.test" "$OUT/cpu.out" 2>/dev/null
  echo
  echo "## cumulative"
  go tool pprof -top -cum -nodecount="$TOP" "$OUT/engine.test" "$OUT/cpu.out" 2>/dev/null
  echo
  echo "## client side only (the VU goroutines; the in-process target server left out), cumulative"
  go tool pprof -top -cum -focus='engine\.\(\*vu\)\.(closedLoop|openLoop)' -nodecount=$((TOP * 2)) \
    "$OUT/engine.test" "$OUT/cpu.out" 2>/dev/null
} | tee "$OUT/top.txt"
echo "profile: $OUT/cpu.out (go tool pprof -http=127.0.0.1:0 $OUT/engine.test $OUT/cpu.out)" >&2
