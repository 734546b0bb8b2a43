import { describe, expect, it } from 'vitest';
import { RunTracker, isTerminal } from './runState';
import type { Run } from './types';
import { plan, run } from '../test-fixtures/wire';

const base: Run = run({ id: 7, plan_id: 1, status: 'running', started_at: '2026-11-29T10:00:00Z', ended_at: null });
const at = (over: Partial<Run>): Run => ({ ...base, ...over });

describe('RunTracker (the stop race)', () => {
  it('a stop answer (202, still "running") arriving after the summary does not undo the final status', () => {
    const t = new RunTracker();
    t.apply(at({ plan: plan() }), 'fetch');
    t.apply(at({ status: 'stopped', ended_at: '2026-11-29T10:00:05Z', thresholds_ok: true }), 'summary');
    const shown = t.apply(at({ status: 'running' }), 'stop');
    expect(shown?.status).toBe('stopped');
    expect(shown?.ended_at).toBe('2026-11-29T10:00:05Z');
    expect(shown?.thresholds_ok).toBe(true);
    expect(shown?.plan?.name).toBe('p'); // kept: the stop answer has no plan
  });

  it("the summary message's run carries the plan id, name, notes and tags like a GET", () => {
    const t = new RunTracker();
    t.apply(at({ plan_id: 4, plan_name: 'p', notes: 'n', tags: ['a'] }), 'fetch');
    const shown = t.apply(at({ plan_id: 4, plan_name: 'p2', notes: 'n2', tags: ['b'], status: 'finished', requests: 9 }), 'summary');
    expect(shown).toMatchObject({ plan_id: 4, plan_name: 'p2', notes: 'n2', tags: ['b'], status: 'finished', requests: 9 });
  });

  it('an older GET (still running) answered after the run ended changes nothing', () => {
    const t = new RunTracker();
    t.apply(at({}), 'fetch');
    t.apply(at({ status: 'finished', requests: 100 }), 'fetch');
    expect(t.apply(at({ status: 'running', requests: 50 }), 'fetch')).toMatchObject({ status: 'finished', requests: 100 });
  });

  it('once the summary gave the final status, it wins over any later fetch', () => {
    const t = new RunTracker();
    t.apply(at({}), 'fetch');
    t.apply(at({ status: 'failed', error: 'boom' }), 'summary');
    expect(t.apply(at({ status: 'finished', error: '' }), 'fetch')?.status).toBe('failed');
  });

  it('the summary message may arrive before anything else, and a summary without a terminal status does not lock', () => {
    const t = new RunTracker();
    expect(t.apply(at({ status: 'finished' }), 'summary')?.status).toBe('finished');
    expect(t.apply(at({ status: 'running' }), 'stop')?.status).toBe('finished');

    const u = new RunTracker();
    u.apply(at({}), 'fetch');
    u.apply(at({ status: 'running' }), 'summary');
    expect(u.apply(at({ status: 'stopped' }), 'fetch')?.status).toBe('stopped');
  });

  it('a non-terminal answer still updates a running run, and missing answers are ignored', () => {
    const t = new RunTracker();
    t.apply(at({ requests: 1 }), 'fetch');
    expect(t.apply(at({ requests: 2 }), 'stop')?.requests).toBe(2);
    expect(t.apply(null, 'fetch')?.requests).toBe(2);
  });

  it('knows the terminal statuses', () => {
    for (const s of ['finished', 'stopped', 'failed', 'interrupted']) expect(isTerminal(s)).toBe(true);
    expect(isTerminal('running')).toBe(false);
    expect(isTerminal(undefined)).toBe(false);
  });
});
