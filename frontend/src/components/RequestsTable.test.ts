import { afterEach, describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import RequestsTable from './RequestsTable.svelte';
import TimingBreakdown from './TimingBreakdown.svelte';
import { setLocale } from '../lib/i18n.svelte';
import { totalRow, type RequestRow } from '../lib/requests';
import { timing } from '../test-fixtures/wire';

afterEach(() => setLocale('en'));

const row = (over: Partial<RequestRow>): RequestRow => ({
  name: 'x',
  requests: 0,
  errors: 0,
  rps: null,
  p50: null,
  p95: null,
  p99: null,
  checksPassed: null,
  checksFailed: null,
  timing: null,
  ...over,
});

const rows = [
  row({ name: 'GET /home', requests: 200, errors: 10, rps: 20, p50: 1.5, p95: 4.25, p99: 9, checksPassed: 190, checksFailed: 10, timing: timing({ connect_ms: { p50: 0, p95: 0.4 }, wait_ms: { p50: 1.2, p95: 3.5 }, receive_ms: { p50: 0.2, p95: 0.6 } }) }),
  row({ name: 'POST /dead', requests: 7, errors: 7, rps: 1, checksPassed: 0, checksFailed: 0, timing: timing() }),
];

const cells = (tr: Element) => Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map((td) => [td.getAttribute('data-col'), td.textContent]));

describe('RequestsTable', () => {
  it('shows a row per name and a Total, with "—" for a name without a successful response', () => {
    const { container } = render(RequestsTable, { rows, total: totalRow(rows), totalKnown: false, live: true });
    const home = container.querySelector('tr[data-request="GET /home"]')!;
    expect(cells(home)).toEqual({ requests: '200', rps: '20', p50: '1.5', p95: '4.25', p99: '9', errors: '10', 'error-pct': '5 %', checks: '190 / 10' });
    const dead = cells(container.querySelector('tr[data-request="POST /dead"]')!);
    expect([dead.p50, dead.p95, dead.p99]).toEqual(['—', '—', '—']);
    expect(dead['error-pct']).toBe('100 %');
    const total = cells(container.querySelector('[data-testid=requests-total]')!);
    expect(total).toMatchObject({ requests: '207', errors: '17', rps: '21', p95: '', checks: '190 / 10' });
  });

  it('speaks Chinese', () => {
    setLocale('zh-CN');
    const { container } = render(RequestsTable, { rows, total: totalRow(rows) });
    expect(container.textContent).toContain('合计');
    expect(container.textContent).toContain('请求数');
  });

  it('has an empty state', () => {
    const { container } = render(RequestsTable, { rows: [], total: totalRow([]) });
    expect(container.textContent).toContain('No request has finished yet.');
  });
});

describe('TimingBreakdown', () => {
  it('shows p50 and p95 of each phase for names with a successful response, and a stacked bar', () => {
    const { container } = render(TimingBreakdown, { rows });
    const trs = container.querySelectorAll('[data-testid=timing-row]');
    expect(trs.length).toBe(1); // POST /dead had no successful response
    const c = cells(trs[0]);
    expect(c).toMatchObject({ 'connect_ms-p50': '0', 'connect_ms-p95': '0.4', 'wait_ms-p50': '1.2', 'wait_ms-p95': '3.5', 'receive_ms-p95': '0.6' });
    const bars = trs[0].querySelectorAll('.bar span');
    expect(bars.length).toBe(2); // wait and receive: connect and TLS p50 are 0
    // the longest stack (1.2 + 0.2 ms) fills the bar: wait takes 1.2 / 1.4 of it
    expect(parseFloat((bars[0] as HTMLElement).style.width)).toBeCloseTo(85.71, 1);
  });

  it('is left out without timing (older runs)', () => {
    const { container } = render(TimingBreakdown, { rows: [row({ name: 'a', requests: 1, p50: 1 })] });
    expect(container.querySelector('[data-testid=timing-breakdown]')).toBeNull();
  });
});
