// How the run view folds the answers it receives about one run — the first GET, refreshes, the
// stop answer (202, status still "running") and the live summary message — into the run it shows.
// Answers can arrive out of order: a stop answer or a slow GET sent before the run ended may land
// after the summary. The rules:
//   1. a terminal status (finished, stopped, failed, interrupted) is never replaced by "running";
//   2. once the summary message has given the run's final status, that status wins over any fetch;
//   3. the summary message's run is the whole run (status, times, totals, plan id and name, notes,
//      tags, as stored when it ended), so it replaces those fields like a GET does.
import type { Run } from './types';

export const TERMINAL_STATUSES = ['finished', 'stopped', 'failed', 'interrupted'] as const;

export function isTerminal(status: string | undefined | null): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status ?? '');
}

export type RunSource = 'fetch' | 'stop' | 'summary';

/**
 * RunTracker holds the run as the page shows it. `apply` merges an answer and returns the run to
 * show; fields an answer lacks (summary, plan — absent from list and stop answers) are kept.
 */
export class RunTracker {
  run: Run | null = null;
  /** The status the summary message gave (the final word), once it arrived. */
  finalStatus: string | null = null;

  apply(next: Run | null | undefined, source: RunSource): Run | null {
    if (!next) return this.run;
    const cur = this.run;
    if (source === 'summary' && isTerminal(next.status)) this.finalStatus = next.status;
    if (!cur) {
      this.run = { ...next };
      if (this.finalStatus) this.run.status = this.finalStatus;
      return this.run;
    }
    const merged: Run = { ...cur, ...next };
    if (next.summary === undefined || (next.summary === null && cur.summary)) merged.summary = cur.summary;
    if (next.plan === undefined) merged.plan = cur.plan;
    if (next.thresholds_ok === undefined && cur.thresholds_ok !== undefined) merged.thresholds_ok = cur.thresholds_ok;

    if (isTerminal(cur.status) && !isTerminal(next.status)) {
      // An answer from before the end (a stop answer, an older GET): it changes nothing we show.
      this.run = { ...cur, summary: merged.summary, plan: merged.plan };
      return this.run;
    }
    if (this.finalStatus) {
      merged.status = this.finalStatus;
      if (!merged.ended_at && cur.ended_at) merged.ended_at = cur.ended_at;
    }
    this.run = merged;
    return this.run;
  }
}
