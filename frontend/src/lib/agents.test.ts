import { describe, expect, it } from 'vitest';
import { AgentsStore, idleMatching, parseLabels, startBody } from './agents';
import type { Agent, Sample } from './types';

const agent = (id: string, labels: Record<string, string>, state = 'idle') =>
  ({ id, host: id, cores: 2, version: 'v', labels, weight: 0, state, cpu_percent: 0, rss_bytes: 0, last_seen: '' }) as Agent;

const second = (s: number, extra: Partial<Sample> = {}) => ({ elapsed_s: s, ...extra }) as Sample;

describe('generators', () => {
  it('reads labels k=v,k=v and names what is wrong', () => {
    expect(parseLabels(' zone=eu , rack=3,')).toEqual({ labels: { zone: 'eu', rack: '3' } });
    expect(parseLabels('empty=')).toEqual({ labels: { empty: '' } });
    expect(parseLabels(' , ')).toEqual({ error: 'generators.labelsEmpty' });
    expect(parseLabels('zone')).toEqual({ error: 'generators.labelsInvalid' });
    expect(parseLabels('=eu')).toEqual({ error: 'generators.labelsInvalid' });
    expect(parseLabels(Array.from({ length: 21 }, (_, i) => `k${i}=v`).join(','))).toEqual({ error: 'generators.labelsTooMany' });
  });

  it('makes the start body the API takes', () => {
    expect(startBody({ kind: 'local' })).toEqual({});
    expect(startBody({ kind: 'agents', n: 3 })).toEqual({ body: { agents: 3 } });
    expect(startBody({ kind: 'labels', text: 'zone=eu' })).toEqual({ body: { agent_labels: { zone: 'eu' } } });
    expect(startBody({ kind: 'labels', text: 'error=x' })).toEqual({ body: { agent_labels: { error: 'x' } } });
    for (const n of [0, 1001, 2.5, NaN]) expect(startBody({ kind: 'agents', n })).toEqual({ error: 'generators.countInvalid' });
    expect(startBody({ kind: 'labels', text: '' })).toEqual({ error: 'generators.labelsEmpty' });
  });

  it('counts the idle agents that carry every label', () => {
    const all = [agent('a', { zone: 'eu', rack: '1' }), agent('b', { zone: 'eu' }), agent('c', { zone: 'us' }), agent('d', { zone: 'eu' }, 'running')];
    expect(idleMatching(all).map((a) => a.id)).toEqual(['a', 'b', 'c']);
    expect(idleMatching(all, { zone: 'eu' }).map((a) => a.id)).toEqual(['a', 'b']);
    expect(idleMatching(all, { zone: 'eu', rack: '1' }).map((a) => a.id)).toEqual(['a']);
  });
});

describe('AgentsStore', () => {
  it('folds each agent’s CPU and memory and keeps the seconds with a missing share once', () => {
    const st = new AgentsStore();
    expect(st.push(second(1))).toBe(false);
    expect(st.any).toBe(false);
    st.push(second(1, { agents: { b: { cpu_percent: 50, rss_bytes: 300 } as never, a: { cpu_percent: 10, rss_bytes: 100 } as never } }));
    st.push(second(2, { agents: { a: { cpu_percent: 30, rss_bytes: 200 } as never }, missing_share: 0.5, missing_agents: ['b'] }));
    expect(st.push(second(2, { missing_share: 0.5, missing_agents: ['b'] }))).toBe(false); // the same second again
    expect(st.any).toBe(true);
    expect(st.list).toEqual([
      { id: 'a', seconds: 2, missingSince: 0, cpuLast: 30, cpuAvg: 20, cpuMax: 30, rssMax: 200, cpuSum: 40 },
      { id: 'b', seconds: 1, missingSince: 2, cpuLast: 50, cpuAvg: 50, cpuMax: 50, rssMax: 300, cpuSum: 50 },
    ]);
    // b back (its spool after a reconnect): delivering again; an earlier second replayed changes nothing.
    st.push(second(3, { agents: { a: { cpu_percent: 30, rss_bytes: 200 } as never, b: { cpu_percent: 40, rss_bytes: 300 } as never } }));
    expect(st.list.find((r) => r.id === 'b')?.missingSince).toBe(0);
    st.push(second(2, { missing_share: 0.5, missing_agents: ['b'] }));
    expect(st.list.find((r) => r.id === 'b')?.missingSince).toBe(0);
    // an agent missing from its first second on has a row saying so
    st.push(second(4, { agents: { a: { cpu_percent: 30, rss_bytes: 200 } as never }, missing_share: 0.6, missing_agents: ['b', 'c'] }));
    expect(st.list.map((r) => [r.id, r.missingSince])).toEqual([['a', 0], ['b', 4], ['c', 4]]);
    expect(st.missing).toEqual([
      { second: 2, share: 0.5, agents: ['b'] },
      { second: 4, share: 0.6, agents: ['b', 'c'] },
    ]);
    st.reset();
    expect(st.any).toBe(false);
  });
});
