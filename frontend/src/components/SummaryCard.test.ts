import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import SummaryCard from './SummaryCard.svelte';
import { summary as wireSummary } from '../test-fixtures/wire';

const summary = wireSummary({
  requests: 123456,
  successes: 123400,
  errors: 56,
  interrupted: 3,
  dropped_iterations: 0,
  duration_s: 10.02,
  rps: 12321.5,
  latency_ms: { min: 0.2, mean: 1.1, p50: 0.9, p75: 1.2, p90: 1.9, p95: 2.4, p99: 4.8, p99_9: 9.1, max: 12 },
  status_codes: { '200': 123400, '503': 50 },
  error_kinds: { status_5xx: 50, timeout: 6 },
  client: { cpu_percent_avg: 71.5, cpu_percent_max: 98, rss_bytes_max: 31457280 },
  thresholds: [
    { expr: 'p(95)<200ms', value: 2.4, ok: true },
    { expr: 'error_rate<0.01%', value: 0.00045, ok: false },
  ],
});

describe('SummaryCard', () => {
  it('prints requests and errors as plain integers and lists kinds, codes and thresholds', () => {
    const { container } = render(SummaryCard, { summary });
    expect(container.querySelector('[data-testid=summary-requests]')!.textContent).toBe('123456');
    expect(container.querySelector('[data-testid=summary-errors]')!.textContent).toBe('56');
    const kinds = container.querySelector('[data-testid=summary-error-kinds]')!.textContent!;
    expect(kinds.indexOf('status_5xx')).toBeLessThan(kinds.indexOf('timeout')); // most frequent first
    const codes = container.querySelector('[data-testid=summary-status-codes]')!.textContent!;
    expect(codes).toContain('503');
    const th = container.querySelector('[data-testid=summary-thresholds]')!;
    expect(th.querySelectorAll('.badge.fail')).toHaveLength(1);
    expect(th.querySelectorAll('.badge.ok')).toHaveLength(1);
    expect(container.textContent).toContain('1 of 2 thresholds failed');
    expect(container.textContent).toContain('30 MiB');
  });
});

describe('SummaryCard, new fields', () => {
  it('shows each count once, grouped, while the hooks keep the plain integer', () => {
    const { container } = render(SummaryCard, { summary: { ...summary, requests: 3646203, successes: 3646203, errors: 0 } });
    const tile = container.querySelector('[data-testid=summary-requests]')!.closest('.tile')!;
    expect(container.querySelector('[data-testid=summary-requests]')!.textContent).toBe('3646203');
    const visible = tile.querySelector('[aria-hidden=true]')!.textContent;
    expect(visible).toBe('3,646,203');
    // the same number is not printed a second time in the tile ("3,646,203 ok")
    expect(tile.textContent!.split('3,646,203').length - 1).toBe(1);
  });

  it('formats threshold values in their unit; null is "no data" and fails', () => {
    const { container } = render(SummaryCard, {
      summary: {
        ...summary,
        thresholds: [
          { expr: 'error_rate<1%', value: 0.0123, ok: false },
          { expr: 'p(95)<200ms', value: null, ok: true },
          { expr: 'rps>10', value: 49.00980196, ok: true },
        ],
      },
    });
    const rows = [...container.querySelectorAll('[data-testid=summary-thresholds] tbody tr')].map((r) => r.textContent);
    expect(rows[0]).toContain('1.23 %');
    expect(rows[1]).toContain('no data');
    expect(rows[1]).toContain('fail');
    expect(rows[2]).toContain('49 req/s');
    expect(rows[2]).toContain('pass');
    expect(container.textContent).toContain('2 of 3 thresholds failed');
  });

  it('prints — instead of 0 ms when no response arrived (all connect_refused)', () => {
    const zeros = { min: 0, mean: 0, p50: 0, p75: 0, p90: 0, p95: 0, p99: 0, p99_9: 0, max: 0 };
    const { container } = render(SummaryCard, {
      summary: {
        ...summary,
        requests: 500,
        successes: 0,
        errors: 500,
        latency_ms: zeros,
        latency_ms_success: zeros,
        status_codes: {},
        error_kinds: { connect_refused: 500 },
        by_name: {},
      },
    });
    expect(container.querySelector('[data-testid=summary-p95]')!.textContent).toBe('—');
    const latRow = container.querySelector('[data-latency-row="all responses"]')!;
    expect(latRow.textContent).not.toContain('0');
    expect(latRow.textContent).toContain('—');
  });

  it('notes generator-bound seconds, shows send rate, and for arrival-rate runs dropped iterations and schedule lag', () => {
    const { container } = render(SummaryCard, {
      summary: {
        ...summary,
        executor: 'constant-arrival-rate',
        generator_bound_seconds: 3,
        seconds: 10,
        send_rate: 12400.4,
        dropped_iterations: 42,
        schedule_lag_ms: { min: 0, mean: 0.2, p50: 0.1, p75: 0.2, p90: 0.4, p95: 0.6, p99: 1.234, p99_9: 2, max: 3 },
      },
    });
    expect(container.querySelector('[data-testid=generator-bound-note]')!.textContent).toContain(
      'Results from 3 of 10 seconds may describe the generator, not the target',
    );
    expect(container.querySelector('[data-testid=summary-send-rate]')!.textContent).toBe('12,400');
    expect(container.querySelector('[data-testid=summary-dropped]')!.textContent).toBe('42');
    expect(container.querySelector('[data-testid=summary-schedule-lag]')!.textContent).toBe('1.23 ms');
    expect(container.querySelector('[data-latency-row="schedule lag"]')).not.toBeNull();
    expect(container.querySelector('[data-testid=summary-cpu]')!.textContent).toMatch(/^0\.7\d cores$/);
  });

  it('renders the capacity table of a concurrency sweep', () => {
    const sweep = [
      { vus: 1, duration_s: 3, requests: 300, rps: 100, p50_ms: 1, p90_ms: 2, p99_ms: 3, error_rate: 0, cpu_percent: 20, rss_bytes: 1 << 24, knee: false, generator_bound_seconds: 0, client_cpu_us_per_request: 0 },
      { vus: 5, duration_s: 3, requests: 1500, rps: 500, p50_ms: 1, p90_ms: 2, p99_ms: 3, error_rate: 0, cpu_percent: 60, rss_bytes: 1 << 24, knee: true, generator_bound_seconds: 0, client_cpu_us_per_request: 0 },
      { vus: 20, duration_s: 3, requests: 1530, rps: 510, p50_ms: 4, p90_ms: 8, p99_ms: 12, error_rate: 0, cpu_percent: 90, rss_bytes: 1 << 24, knee: false, generator_bound_seconds: 0, client_cpu_us_per_request: 0 },
    ];
    const { container } = render(SummaryCard, { summary: { ...summary, executor: 'concurrency-sweep', sweep } });
    expect(container.querySelectorAll('[data-testid=capacity-row]')).toHaveLength(3);
    expect(container.querySelector('[data-testid=capacity-row][data-knee="true"]')!.getAttribute('data-vus')).toBe('5');
    expect(container.textContent).toContain('The knee is at 5 VUs');
  });
});

describe('SummaryCard, the verdict', () => {
  const dead = wireSummary({
    requests: 14482, successes: 0, errors: 14482, duration_s: 1, rps: 14482, seconds: 1,
    error_kinds: { connect_refused: 14482 }, status_codes: {}, client: { cpu_percent_avg: 50, cpu_percent_max: 60, rss_bytes_max: 1 },
  });

  it('a failed run: red, what failed, no "figures describe the target", throughput not a success figure', () => {
    const { container } = render(SummaryCard, { summary: dead, outcome: 'failed' });
    const v = container.querySelector('[data-testid=run-verdict]')!;
    expect(v.classList.contains('error')).toBe(true);
    expect(v.textContent).toContain('✗ failed');
    expect(v.textContent).toContain('connect_refused ×14,482 (100');
    expect(container.querySelector('[data-testid=generator-trust]')).toBeNull();
    expect(container.textContent).not.toContain('describe the target');
    const tp = container.querySelector('[data-testid=summary-throughput]')!;
    expect(tp.querySelector('.label')!.textContent).not.toContain('Throughput');
    expect(tp.querySelector('.value.bad')).not.toBeNull();
    expect(tp.querySelector('[data-testid=summary-success-rate]')!.textContent).toBe('successful 0/s');
  });

  it('a run with errors: amber, the error count and kinds', () => {
    const { container } = render(SummaryCard, { summary, outcome: 'finished_with_errors' });
    const v = container.querySelector('[data-testid=run-verdict]')!;
    expect(v.classList.contains('warn')).toBe(true);
    expect(v.textContent).toContain('56 of 123,456 requests failed');
    expect(v.textContent).toContain('status_5xx ×50');
    expect(v.textContent).toContain('1 of 2 thresholds failed');
    expect(container.querySelector('[data-testid=generator-trust]')).toBeNull();
  });

  it('a run stopped before any request: a neutral note that nothing was tested, not a failure', () => {
    const none = { ...dead, requests: 0, errors: 0, rps: 0, seconds: 0, error_kinds: {} };
    const { container } = render(SummaryCard, { summary: none, outcome: 'stopped' });
    const v = container.querySelector('[data-testid=run-verdict]')!;
    expect(v.getAttribute('data-outcome')).toBe('stopped');
    expect(v.classList.contains('info')).toBe(true);
    expect(v.textContent).toContain('■ stopped');
    expect(v.textContent).toContain('nothing was tested');
    expect(container.textContent).not.toContain('✗ failed');
    expect(container.querySelector('[data-testid=generator-trust]')).toBeNull();
    expect(container.querySelector('[data-testid=summary-throughput] .value.bad')).toBeNull();
  });

  it('a passed run says passed, and the generator note stays', () => {
    const { container } = render(SummaryCard, { summary: { ...summary, errors: 0, successes: 123456, thresholds: [], seconds: 10, generator_bound_seconds: 0 }, outcome: 'passed' });
    const v = container.querySelector('[data-testid=run-verdict]')!;
    expect(v.classList.contains('ok')).toBe(true);
    expect(v.textContent).toContain('✓ passed');
    expect(container.querySelector('[data-testid=generator-trust]')).not.toBeNull();
    expect(container.querySelector('[data-testid=summary-success-rate]')).toBeNull();
  });

  it('a degraded run over agents is never "passed": amber, names the lost agents, no "figures describe the target"', () => {
    const { container } = render(SummaryCard, {
      summary: { ...summary, errors: 0, successes: 123456, thresholds: [], seconds: 10, generator_bound_seconds: 0, agents: 2, degraded: true, lost_agents: ['gen-b'] },
      outcome: 'passed',
    });
    const v = container.querySelector('[data-testid=run-verdict]')!;
    expect(v.getAttribute('data-outcome')).toBe('degraded');
    expect(v.classList.contains('warn')).toBe(true);
    expect(v.textContent).toContain('⚠ degraded');
    expect(v.textContent).toContain('gen-b');
    expect(v.textContent).not.toContain('✓ passed');
    expect(container.querySelector('[data-testid=generator-trust]')).toBeNull();
  });
});

describe('SummaryCard, decoded bodies', () => {
  it('shows the decoded size of compressed bodies beside the wire bytes, only when some were decoded', () => {
    const { container, unmount } = render(SummaryCard, { summary: wireSummary({ bytes_in: 2048, body_bytes_decoded: 3 * 1024 * 1024 }) });
    expect(container.querySelector('[data-testid=summary-decoded]')!.textContent).toBe('3 MiB decoded');
    unmount();
    const plain = render(SummaryCard, { summary: wireSummary({ bytes_in: 2048 }) });
    expect(plain.container.querySelector('[data-testid=summary-decoded]')).toBeNull();
  });
});
