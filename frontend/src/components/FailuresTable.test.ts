import { afterEach, describe, expect, it } from 'vitest';
import { fireEvent, render } from '@testing-library/svelte';
import FailuresTable from './FailuresTable.svelte';
import source from './FailuresTable.svelte?raw';
import { setLocale } from '../lib/i18n.svelte';
import type { FailureGroup } from '../lib/types';

afterEach(() => setLocale('en'));

function groups(): FailureGroup[] {
  return [
    {
      request: 'checkout',
      kind: 'status_5xx',
      status: 503,
      message: 'HTTP 503 Service Unavailable',
      count: 300,
      sample: { status: 503, headers: [['Retry-After', '5'], ['Content-Type', 'text/html']], body: '<h1>busy</h1>', body_truncated: true },
    },
    { request: 'checkout', kind: 'connect_refused', status: 0, message: 'dial tcp 127.0.0.1:9: connect: connection refused', count: 100 },
    { request: '', kind: '', status: 0, message: '(other)', count: 100 },
  ];
}

describe('FailuresTable', () => {
  it('lists request, kind, status, message, count and share of each group', () => {
    const { container } = render(FailuresTable, { groups: groups() });
    const rows = [...container.querySelectorAll('[data-testid=failure-row]')].map((r) =>
      [...r.querySelectorAll('td')].slice(1).map((td) => td.textContent?.trim()),
    );
    expect(rows).toEqual([
      ['checkout', 'status_5xx', '503', 'HTTP 503 Service Unavailable', '300', '60 %'],
      ['checkout', 'connect_refused', '—', 'dial tcp 127.0.0.1:9: connect: connection refused', '100', '20 %'],
      ['—', '—', '—', 'other failures (beyond 100 groups)', '100', '20 %'],
    ]);
  });

  it('opens a row on its sample response: status, headers, body in a <pre>, truncated note', async () => {
    const { container } = render(FailuresTable, { groups: groups() });
    expect(container.querySelector('[data-testid=failure-sample]')).toBeNull();
    const toggle = container.querySelector('[data-testid=failure-row] button')!;
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    await fireEvent.click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    const smp = container.querySelector('[data-testid=failure-sample]')!;
    expect(smp.textContent).toContain('HTTP 503');
    expect(smp.textContent).toContain('Retry-After');
    expect(smp.querySelector('pre')!.textContent).toBe('<h1>busy</h1>'); // text, never markup
    expect(smp.querySelector('h1')).toBeNull();
    expect(smp.querySelector('[data-testid=failure-truncated]')).not.toBeNull();
    await fireEvent.click(toggle);
    expect(container.querySelector('[data-testid=failure-sample]')).toBeNull();
  });

  it('gives a row without a sample no expand toggle, only why there is none', async () => {
    const live: FailureGroup[] = [
      { request: 'a', kind: 'status_4xx', status: 404, message: 'HTTP 404 Not Found', count: 2 },
      { request: 'a', kind: 'timeout', status: 0, message: 'no complete response within http.timeout (5s)', count: 1 },
    ];
    const { container } = render(FailuresTable, { groups: live, running: true });
    const rows = container.querySelectorAll('[data-testid=failure-row]');
    expect(container.querySelectorAll('[data-testid=failure-row] button')).toHaveLength(0);
    await fireEvent.click(rows[0]);
    await fireEvent.click(rows[1]);
    expect(container.querySelector('[data-testid=failure-sample]')).toBeNull();
    const notes = [...container.querySelectorAll('[data-testid=failure-no-sample]')].map((n) => n.getAttribute('title'));
    expect(notes).toEqual(['The sample response is shown when the run has ended.', 'No response arrived: there is no sample to show.']);
  });

  it('wraps a long header name or value anywhere so the table stays within its panel', async () => {
    const long = 'X-' + 'a'.repeat(254);
    const g = groups();
    g[0].sample!.headers = [[long, 'v'.repeat(300)]];
    const { container } = render(FailuresTable, { groups: g });
    await fireEvent.click(container.querySelector('[data-testid=failure-row] button')!);
    const th = container.querySelector('[data-testid=failure-sample] .headers th')!;
    expect(th.textContent).toBe(long);
    // jsdom lays nothing out and loads no component CSS: the rules that keep the width are read
    // from the component's <style> (a header name never nowrap; cells wrap anywhere; fixed layout)
    const css = source.slice(source.indexOf('<style>'));
    const rule = (sel: string) => [...css.matchAll(/([^{}]+)\{([^}]*)\}/g)].filter((m) => m[1].split(',').some((x) => x.trim() === sel)).map((m) => m[2]).join(';');
    expect(rule('.headers th')).not.toMatch(/nowrap/);
    expect(rule('.headers th, .headers td') + rule('.failures td')).toMatch(/overflow-wrap:\s*anywhere/);
    expect(rule('.headers')).toMatch(/table-layout:\s*fixed/);
    expect(rule('.failures table.data')).toMatch(/table-layout:\s*fixed/);
  });

  it('speaks Chinese', async () => {
    setLocale('zh-CN');
    const { container } = render(FailuresTable, { groups: groups() });
    const text = container.textContent ?? '';
    expect(text).toContain('失败');
    expect(text).toContain('其他失败');
    expect(text).not.toMatch(/Failures|other failures|count|share/);
    await fireEvent.click(container.querySelector('[data-testid=failure-row]')!);
    expect(container.querySelector('[data-testid=failure-sample]')!.textContent).toContain('截断');
  });
});
