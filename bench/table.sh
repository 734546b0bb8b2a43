#!/usr/bin/env bash
# bench/table.sh — render bench.sh CSV files as markdown tables:
#   1. every run (concurrency, client CPU, client memory, server CPU, TPS, latency, errors);
#   2. the median per concurrency and tool over the rounds;
#   3. Volley's CPU µs per request against wrk and bombardier: the median of the per-round ratios
#      (both tools ran minutes apart in the same round, so a ratio cancels most machine drift).
#
#   bench/table.sh bench/results/bench-*.csv
#   bench/table.sh --runs FILE.csv      # only table 1
#   bench/table.sh --summary FILE.csv   # only tables 2 and 3
set -euo pipefail
what=all
case "${1:-}" in --runs) what=runs; shift ;; --summary) what=summary; shift ;; esac
[[ $# -gt 0 ]] || { echo "usage: $0 [--runs|--summary] FILE.csv..." >&2; exit 2; }

if [[ $what != summary ]]; then
  echo "| C | tool | round | client CPU s (usr+sys) | client µs/req | client RSS MiB | nginx CPU s | nginx µs/req | TPS | p50 ms | p99 ms | errors | other CPU s |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, '$1=="label"{next} {
    printf "| %d | %s | %d | %.2f (%.2f+%.2f) | %.1f | %.1f | %.2f | %.1f | %d | %s | %s | %d | %.2f |\n",
      $4, $3, $2, $14, $12, $13, $17, $16/1024, $18, $19, $8, $9, $10, $11, $21
  }' "$@"
fi
[[ $what == runs ]] && exit 0
[[ $what == all ]] && echo

awk -F, '
  function median(arr, n,   i, j, t, a) {
    for (i = 1; i <= n; i++) a[i] = arr[i]
    for (i = 2; i <= n; i++) { t = a[i]; j = i - 1; while (j > 0 && a[j] > t) { a[j+1] = a[j]; j-- } a[j+1] = t }
    if (n == 0) return -1
    return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  function med(key, col,   i, n, v) {
    n = cnt[key]
    for (i = 1; i <= n; i++) v[i] = val[key, i, col]
    return median(v, n)
  }
  $1 == "label" { next }
  {
    c = $4 + 0; t = $3; k = c SUBSEP t
    if (!(k in cnt)) { cnt[k] = 0; if (!(c in seenc)) { seenc[c] = 1; cs[++nc] = c } if (!(t in seent)) { seent[t] = 1; ts[++nt] = t } }
    n = ++cnt[k]
    for (i = 1; i <= NF; i++) val[k, n, i] = $i
    upr[c, t, $1 SUBSEP $2] = $17            # µs/req by label+round, for per-round ratios
    rounds[c, $1 SUBSEP $2] = 1
  }
  END {
    # sort concurrency levels numerically
    for (i = 2; i <= nc; i++) { x = cs[i]; j = i - 1; while (j > 0 && cs[j] > x) { cs[j+1] = cs[j]; j-- } cs[j+1] = x }
    print "Median over rounds:"
    print ""
    print "| C | tool | runs | client CPU s | client µs/req | client RSS MiB | nginx CPU s | TPS | p50 ms | p99 ms | errors |"
    print "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (a = 1; a <= nc; a++) for (b = 1; b <= nt; b++) {
      k = cs[a] SUBSEP ts[b]; if (!(k in cnt)) continue
      printf "| %d | %s | %d | %.2f | %.1f | %.1f | %.2f | %d | %.3f | %.3f | %d |\n", cs[a], ts[b], cnt[k],
        med(k, 14), med(k, 17), med(k, 16) / 1024, med(k, 18), med(k, 8), med(k, 9), med(k, 10), med(k, 11)
    }
    if (!(("volley") in seent)) exit
    print ""
    print "Volley client CPU µs/request against the peers (ratio = median of per-round ratios; targets: ≤ bombardier, ≤ 1.25 × wrk):"
    print ""
    print "| C | Volley µs/req | wrk µs/req | bombardier µs/req | Volley / wrk | Volley / bombardier | ≤ 1.25 × wrk | ≤ bombardier |"
    print "|---:|---:|---:|---:|---:|---:|---|---|"
    for (a = 1; a <= nc; a++) {
      c = cs[a]; nw = 0; nb = 0
      delete rw; delete rb
      for (r in rounds) {
        split(r, rr, SUBSEP); if (rr[1] != c) continue
        lr = rr[2] SUBSEP rr[3]
        if ((c, "volley", lr) in upr && upr[c, "volley", lr] > 0) {
          if ((c, "wrk", lr) in upr && upr[c, "wrk", lr] > 0) rw[++nw] = upr[c, "volley", lr] / upr[c, "wrk", lr]
          if ((c, "bombardier", lr) in upr && upr[c, "bombardier", lr] > 0) rb[++nb] = upr[c, "volley", lr] / upr[c, "bombardier", lr]
        }
      }
      v = ((c SUBSEP "volley") in cnt) ? med(c SUBSEP "volley", 17) : -1
      w = ((c SUBSEP "wrk") in cnt) ? med(c SUBSEP "wrk", 17) : -1
      bo = ((c SUBSEP "bombardier") in cnt) ? med(c SUBSEP "bombardier", 17) : -1
      xw = median(rw, nw); xb = median(rb, nb)
      printf "| %d | %s | %s | %s | %s | %s | %s | %s |\n", c,
        (v < 0 ? "–" : sprintf("%.1f", v)), (w < 0 ? "–" : sprintf("%.1f", w)), (bo < 0 ? "–" : sprintf("%.1f", bo)),
        (xw < 0 ? "–" : sprintf("%.2f", xw)), (xb < 0 ? "–" : sprintf("%.2f", xb)),
        (xw < 0 ? "–" : (xw <= 1.25 ? "met" : "not met")), (xb < 0 ? "–" : (xb <= 1.0 ? "met" : "not met"))
    }
  }' "$@"
