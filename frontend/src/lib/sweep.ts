// The capacity table of a concurrency sweep (summary.sweep): one row per VU level; the server marks
// the knee — the lowest level that reaches 95 % of the sweep's best throughput — unless the best
// throughput came at the last level (the sweep never saturated anything).
import type { SweepRow } from './types';
import { t, tn } from './i18n.svelte';
import { fmtInt } from './format';

/** kneeIndex is the index of the knee row, or -1 when there is none. */
export function kneeIndex(rows: readonly SweepRow[]): number {
  return rows.findIndex((r) => r.knee === true);
}

/** kneeSentence says what the sweep found and, when the server says (summary.sweep_limited_by),
 * whether the load generator or the target was the limit. */
export function kneeSentence(rows: readonly SweepRow[], limitedBy?: string): string {
  if (rows.length === 0) return t('sweep.none');
  const k = kneeIndex(rows);
  let s: string;
  if (k >= 0) {
    const n = rows[k].vus;
    s = t('sweep.knee', { vus: tn('unit.vus', n, { n: fmtInt(n) }) });
  } else {
    s = t('sweep.noKnee');
  }
  if (limitedBy === 'generator') s += ' ' + t('sweep.limitGenerator');
  else if (limitedBy === 'target') s += ' ' + t('sweep.limitTarget');
  else if (limitedBy === 'none') s += ' ' + t('sweep.limitNone');
  return s;
}
