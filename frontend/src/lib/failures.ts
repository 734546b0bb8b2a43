// Failure groups of a run (docs/api.md, "Failures"): the summary's when the run has ended,
// else the live stream's. A live second carries every group (counts so far) only when one changed,
// and each group's sample response only once: LiveFailures keeps the latest groups and the samples
// seen so far.
import type { FailureGroup, FailureSample, Sample, Summary } from './types';

/** The identity of a group: request, kind, status and message. */
export function failureKey(g: FailureGroup): string {
  return [g.request, g.kind, g.status, g.message].join('\u0000');
}

export class LiveFailures {
  groups: FailureGroup[] = [];
  private samples = new Map<string, FailureSample>();

  reset() {
    this.groups = [];
    this.samples.clear();
  }

  /** push takes one second; true when its groups replaced the shown ones. */
  push(s: Sample): boolean {
    if (!s.failures) return false;
    for (const g of s.failures) if (g.sample) this.samples.set(failureKey(g), g.sample);
    this.groups = s.failures.map((g) => ({ ...g, sample: g.sample ?? this.samples.get(failureKey(g)) }));
    return true;
  }
}

/** runFailures: the groups to show — the summary's when there is one (older runs have none: null). */
export function runFailures(summary: Summary | null, live: FailureGroup[]): FailureGroup[] | null {
  if (summary) return summary.failures ?? null;
  return live;
}
