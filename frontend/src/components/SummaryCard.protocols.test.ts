import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import SummaryCard from './SummaryCard.svelte';
import { summary as wireSummary } from '../test-fixtures/wire';
import { setLocale } from '../lib/i18n.svelte';

describe('SummaryCard, protocols', () => {
  it('lists responses by negotiated protocol for an HTTP/2 run, in both languages', () => {
    const summary = wireSummary({ requests: 1000, successes: 1000, status_codes: { '200': 1000 }, protocols: { h2: 900, 'http/1.1': 100 } });
    const { container } = render(SummaryCard, { summary });
    const table = container.querySelector('[data-testid=summary-protocols]')!;
    expect(table.textContent).toContain('h2');
    expect(table.textContent!.indexOf('h2')).toBeLessThan(table.textContent!.indexOf('http/1.1')); // most first
    expect(container.textContent).toContain('Protocols (responses)');
    setLocale('zh-CN');
    try {
      const zh = render(SummaryCard, { summary });
      expect(zh.container.textContent).toContain('协议（响应数）');
    } finally {
      setLocale('en');
    }
  });

  it('has no protocols table for a run without the figure (HTTP/1.1 plans)', () => {
    const { container } = render(SummaryCard, { summary: wireSummary({ requests: 5, successes: 5, status_codes: { '200': 5 } }) });
    expect(container.querySelector('[data-testid=summary-protocols]')).toBeNull();
  });
});
