import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import SummaryCard from './SummaryCard.svelte';
import type { Summary } from '../lib/types';

const summary: Summary = {
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
};

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
