import { describe, expect, it } from 'vitest';
import { kneeSentence } from './sweep';

describe('kneeSentence', () => {
  const rows = [
    { vus: 1, duration_s: 2, requests: 10, rps: 5, p50_ms: 1, p90_ms: 1, p99_ms: 1, error_rate: 0, cpu_percent: 10, rss_bytes: 1, knee: false, generator_bound_seconds: 0, client_cpu_us_per_request: 0 },
    { vus: 10, duration_s: 2, requests: 100, rps: 50, p50_ms: 1, p90_ms: 1, p99_ms: 1, error_rate: 0, cpu_percent: 10, rss_bytes: 1, knee: true, generator_bound_seconds: 0, client_cpu_us_per_request: 0 },
  ];
  it('names the knee and what limited the sweep', () => {
    expect(kneeSentence(rows, 'target')).toMatch(/10 VUs.*target was the limit/);
    expect(kneeSentence(rows, 'generator')).toMatch(/load generator was the limit/);
    expect(kneeSentence(rows)).not.toMatch(/limit/);
  });
});
