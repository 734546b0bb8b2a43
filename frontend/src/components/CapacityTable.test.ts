import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import CapacityTable from './CapacityTable.svelte';
import { kneeIndex, kneeSentence } from '../lib/sweep';
import type { SweepRow } from '../lib/types';

const row = (vus: number, rps: number, over: Partial<SweepRow> = {}): SweepRow => ({
  vus,
  duration_s: 3,
  requests: Math.round(rps * 3),
  rps,
  p50_ms: vus / 10,
  p90_ms: vus / 5,
  p99_ms: vus / 2,
  error_rate: 0,
  cpu_percent: 127.4,
  rss_bytes: 31457280,
  knee: false,
  generator_bound_seconds: 0,
  client_cpu_us_per_request: 42.5,
  ...over,
});

describe('CapacityTable', () => {
  it('renders one row per level with the knee highlighted and named', () => {
    const rows = [row(1, 900), row(5, 4000), row(20, 4100, { knee: true }), row(100, 4150, { p99_ms: 85.25, error_rate: 0.0123 })];
    const { container } = render(CapacityTable, { rows, charts: false });
    const table = container.querySelector('[data-testid=capacity-table]')!;
    const trs = [...table.querySelectorAll('[data-testid=capacity-row]')];
    expect(trs.map((r) => r.getAttribute('data-vus'))).toEqual(['1', '5', '20', '100']);
    const knees = table.querySelectorAll('[data-knee="true"]');
    expect(knees).toHaveLength(1);
    expect(knees[0].getAttribute('data-vus')).toBe('20');
    expect(knees[0].classList.contains('knee')).toBe(true);
    expect(trs[0].hasAttribute('data-knee')).toBe(false);
    expect(container.querySelector('[data-testid=capacity-sentence]')!.textContent).toBe(
      'The knee is at 20 VUs: more concurrency adds latency, not throughput.',
    );
    const last = trs[3].textContent!;
    expect(last).toContain('4,150'); // TPS
    expect(last).toContain('85.3 ms'); // p99
    expect(last).toContain('1.23 %'); // error rate
    expect(last).toContain('127 %'); // client CPU, % of one core
    expect(last).toContain('30 MiB'); // client memory
    expect(table.querySelector('thead')!.textContent).toContain('100 % = 1 core');
  });

  it('says when there is no knee, and shows — for a level without responses', () => {
    const rows = [row(1, 100), row(5, 400), row(20, 900, { requests: 0, rps: 0, p50_ms: 0, p90_ms: 0, p99_ms: 0 })];
    expect(kneeIndex(rows)).toBe(-1);
    expect(kneeSentence(rows)).toBe('No knee: throughput still grew at the last level.');
    expect(kneeSentence([row(1, 100, { knee: true }), row(5, 90)])).toBe('The knee is at 1 VU: more concurrency adds latency, not throughput.');
    const { container } = render(CapacityTable, { rows, charts: false });
    expect(container.querySelectorAll('[data-knee="true"]')).toHaveLength(0);
    expect(container.textContent).toContain('No knee: throughput still grew at the last level.');
    const cells = [...container.querySelectorAll('[data-vus="20"] td')].map((td) => td.textContent);
    expect(cells.filter((c) => c === '—').length).toBeGreaterThanOrEqual(3);
  });

  it('adds the server columns when a monitor measured the target, and says when nothing limited', () => {
    const plain = render(CapacityTable, { rows: [row(1, 100)], charts: false });
    expect(plain.container.querySelector('thead')!.textContent).toContain('client µs/req');
    expect(plain.container.querySelector('thead')!.textContent).not.toContain('server CPU');
    expect(plain.container.querySelector('[data-testid=capacity-client-us]')!.textContent).toBe('42.5');
    plain.unmount();
    const rows = [
      row(1, 100, { server_cpu_percent: 12.5, server_memory_bytes: 8 * 1048576, server_cpu_us_per_request: 1250 }),
      row(8, 700, { server_cpu_percent: 55, server_memory_bytes: 9 * 1048576, server_cpu_us_per_request: 785.7 }),
    ];
    const { container } = render(CapacityTable, { rows, limitedBy: 'none', charts: false });
    expect(container.querySelector('thead')!.textContent).toContain('server memory');
    const cpu = [...container.querySelectorAll('[data-testid=capacity-server-cpu]')].map((c) => c.textContent);
    expect(cpu).toEqual(['12.5 %', '55 %']);
    expect(container.querySelector('[data-vus="8"]')!.textContent).toContain('9 MiB');
    expect(container.querySelector('[data-vus="8"] [data-testid=capacity-server-us]')!.textContent).toBe('786');
    expect(container.querySelector('[data-testid=capacity-sentence]')!.textContent).toContain('Neither side was measured at its limit');
  });
});
