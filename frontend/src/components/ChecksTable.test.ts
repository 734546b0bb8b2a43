import { afterEach, describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import ChecksTable from './ChecksTable.svelte';
import { setLocale } from '../lib/i18n.svelte';
import { emptyCheck } from '../lib/planForm';

afterEach(() => setLocale('en'));

function rows() {
  const body = emptyCheck('body'); // op "contains"
  return [emptyCheck('status'), body, emptyCheck('latency')];
}

describe('ChecksTable', () => {
  it('names what a check reads and its word operators in the chosen language', () => {
    setLocale('zh-CN');
    const { container } = render(ChecksTable, { props: { checks: rows(), index: 0, err: () => undefined } });
    const text = container.textContent ?? '';
    expect(text).toContain('状态码');
    expect(text).toContain('响应体');
    expect(text).toContain('响应时间');
    expect(text).not.toMatch(/status code|response body|response time/);
    const ops = [...container.querySelectorAll('option')].map((o) => o.textContent);
    expect(ops).toContain('包含');
    expect(ops).not.toContain('contains');
  });

  it('keeps the English words in English', () => {
    const { container } = render(ChecksTable, { props: { checks: rows(), index: 0, err: () => undefined } });
    expect(container.textContent).toContain('response body');
    expect([...container.querySelectorAll('option')].map((o) => o.textContent)).toContain('contains');
  });
});
