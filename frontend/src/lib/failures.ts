// Failure groups of a run (docs/api.md, "Failures"): the summary's when the run has ended, else
// the live stream's. A second carries the groups that changed in it, each with its count since the
// run's start, and each group's sample response only once: LiveFailures merges them.
import type { FailureGroup, Sample, Summary } from './types';

/** The identity of a group: request, kind, status and message. */
export function failureKey(g: FailureGroup): string {
  return [g.request, g.kind, g.status, g.message].join('\u0000');
}

export class LiveFailures {
  groups: FailureGroup[] = [];
  private byKey = new Map<string, FailureGroup>();

  reset() {
    this.groups = [];
    this.byKey.clear();
  }

  /** push takes one second (seconds in order); true when it changed the groups. */
  push(s: Sample): boolean {
    if (!s.failures?.length) return false;
    for (const g of s.failures) {
      const key = failureKey(g);
      this.byKey.set(key, { ...g, sample: g.sample ?? this.byKey.get(key)?.sample });
    }
    this.groups = [...this.byKey.values()].sort((a, b) => b.count - a.count);
    return true;
  }
}

/** runFailures: the groups to show — the summary's when there is one (older runs have none: null). */
export function runFailures(summary: Summary | null, live: FailureGroup[]): FailureGroup[] | null {
  if (summary) return summary.failures ?? null;
  return live;
}
