import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import TargetPanel from './TargetPanel.svelte';
import { TargetStore } from '../lib/target';
import type { Sample, Summary } from '../lib/types';

const sample = (elapsed: number, target: Record<string, number>, errs?: Sample['target_errors']): Sample =>
  ({ elapsed_s: elapsed, t: 0, target, target_errors: errs }) as unknown as Sample;

describe('TargetPanel', () => {
  it('draws one chart per monitor and kind, with gaps counted, and each error once', () => {
    const store = new TargetStore();
    const err = { monitor: 'web1', message: 'timeout after 800ms', t: Date.UTC(2026, 0, 1, 10, 0, 2), seconds: 1 };
    store.push(sample(1, { 'web1/cpu_percent': 20, 'web1/cpu_percent/0': 25, 'nginx/cpu_percent/nginx': 12 }));
    store.push(sample(2, { 'nginx/cpu_percent/nginx': 14 }, [err]));
    store.push(sample(3, { 'web1/cpu_percent': 22, 'web1/cpu_percent/0': 30, 'nginx/cpu_percent/nginx': 15 }, [err]));
    const { container } = render(TargetPanel, { store, tick: 1 });
    const web = container.querySelector('[data-testid=target-chart-web1-cpu]')!;
    expect(web.getAttribute('data-series')).toBe('2');
    expect(web.getAttribute('data-points')).toBe('3');
    expect(web.getAttribute('data-gaps')).toBe('1');
    expect(container.querySelector('[data-testid=target-chart-nginx-cpu]')!.getAttribute('data-gaps')).toBe('0');
    const errors = container.querySelectorAll('[data-testid=target-error]');
    expect(errors).toHaveLength(1);
    expect(errors[0].textContent).toContain('web1');
    expect(errors[0].textContent).toContain('timeout after 800ms');
    expect(container.querySelector('[data-testid=target-summary]')).toBeNull(); // no summary yet
  });

  it('shows the summary table with avg and max in units, and the errors with how long they lasted', () => {
    const store = new TargetStore();
    const summary = {
      target: [
        { id: 'web1/memory_used_bytes', monitor: 'web1', type: 'node', metric: 'memory_used_bytes', unit: 'bytes', avg: 104857600, max: 209715200, seconds: 8, gaps: 2 },
        { id: 'nginx/cpu_percent/nginx', monitor: 'nginx', type: 'process', metric: 'cpu_percent', label: 'nginx', unit: 'percent', avg: 42.5, max: 97, seconds: 10, gaps: 0 },
      ],
      target_series: [],
      monitor_errors: [{ monitor: 'web1', message: 'body over 4 MiB', t: 0, seconds: 2 }],
    } as unknown as Summary;
    const { container } = render(TargetPanel, { store, tick: 0, summary });
    const rows = [...container.querySelectorAll('[data-testid=target-row]')].map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent).join(' '));
    expect(rows[0]).toBe('web1 memory used 100 MiB 200 MiB 2 / 10');
    expect(rows[1]).toBe('nginx CPU % (nginx) 42.5 % 97 % 0 / 10');
    const errors = container.querySelectorAll('[data-testid=target-error]');
    expect(errors).toHaveLength(1);
    expect(errors[0].textContent).toContain('body over 4 MiB');
    expect(errors[0].textContent).toContain('2 s');
  });
});
