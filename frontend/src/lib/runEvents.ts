// Live control's load changes (RunEvent, docs/api.md "Live control"): which executors take them,
// how an event reads, and the union of the events a run view has seen.
import type { RunEvent } from './types';
import { fmtInt, fmtNum } from './format';
import { t } from './i18n.svelte';

export type ControlKind = 'vus' | 'rate';

/** controlKind is what a running test of this executor can change: its VUs, its rate, or nothing. */
export function controlKind(executor: string): ControlKind | null {
  switch (executor) {
    case 'constant-vus':
    case 'ramping-vus':
      return 'vus';
    case 'constant-arrival-rate':
    case 'ramping-arrival-rate':
      return 'rate';
  }
  return null;
}

/** fmtValue shows a whole count without decimals, a fraction as fmtNum does. */
export function fmtValue(v: number): string {
  return Number.isInteger(v) ? fmtInt(v) : fmtNum(v);
}

/** eventLabel is an event's marker text: "VUs 10 → 50", "rate 50 → 200". */
export function eventLabel(ev: RunEvent): string {
  return t(ev.kind === 'rate' ? 'control.eventRate' : 'control.eventVUs', { from: fmtValue(ev.from), to: fmtValue(ev.to) });
}

/** eventTitle adds who made the change and when (seconds into the run). */
export function eventTitle(ev: RunEvent): string {
  return t('control.eventTitle', { what: eventLabel(ev), by: ev.by || '?', at: ev.elapsed_s.toFixed(1) });
}

/** addEvents returns events with those of more not already in it, in time order (same t, kind and to: the same change). */
export function addEvents(events: RunEvent[], more: readonly RunEvent[] | null | undefined): RunEvent[] {
  if (!more || more.length === 0) return events;
  const key = (e: RunEvent) => `${e.t}:${e.kind}:${e.to}`;
  const seen = new Set(events.map(key));
  const out = [...events];
  for (const e of more) {
    if (!seen.has(key(e))) {
      seen.add(key(e));
      out.push(e);
    }
  }
  return out.sort((a, b) => a.t - b.t);
}
