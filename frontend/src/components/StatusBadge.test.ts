import { afterEach, describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import StatusBadge from './StatusBadge.svelte';
import { setLocale } from '../lib/i18n.svelte';

describe('StatusBadge', () => {
  afterEach(() => setLocale('en'));

  it('shows a running run by its status alone', () => {
    const { container } = render(StatusBadge, { status: 'running', outcome: '' });
    const b = container.querySelector('.badge')!;
    expect(b.textContent).toBe('running');
    expect(b.className).toContain('running');
    expect(b.hasAttribute('data-outcome')).toBe(false);
  });

  it('colours an ended run by its outcome and names it unless it passed', () => {
    const cases: [string, string, string, string][] = [
      ['finished', 'passed', 'finished', 'finished'],
      ['finished', 'finished_with_errors', 'with-errors', 'finished · ⚠ with errors'],
      ['finished', 'failed', 'failed', 'finished · ✗ failed'],
      ['stopped', 'failed', 'failed', 'stopped · ✗ failed'],
      ['failed', 'failed', 'failed', 'failed'],
      ['stopped', 'stopped', 'stopped', 'stopped'], // stopped before any request: the status says it
    ];
    for (const [status, outcome, cls, text] of cases) {
      const { container, unmount } = render(StatusBadge, { status, outcome, error: 'no successful response: 9 connect_refused (of 9 requests)' });
      const b = container.querySelector('.badge')!;
      expect(b.classList.contains(cls), `${status}/${outcome} class ${b.className}`).toBe(true);
      expect(b.textContent).toBe(text);
      expect(b.getAttribute('data-outcome')).toBe(outcome);
      expect(b.getAttribute('data-status')).toBe(status);
      unmount();
    }
  });

  it('says why in its title, with the threshold level, in both languages', () => {
    const props = { status: 'finished', outcome: 'failed', error: 'no successful response: 9 connect_refused (of 9 requests)' };
    let { container, unmount } = render(StatusBadge, props);
    expect(container.querySelector('.badge')!.getAttribute('title')).toBe(
      'Failed: no successful response, or the run itself failed — no successful response: 9 connect_refused (of 9 requests)',
    );
    unmount();
    ({ container, unmount } = render(StatusBadge, { status: 'finished', outcome: 'finished_with_errors' }));
    expect(container.querySelector('.badge')!.getAttribute('title')).toContain('more than 5');
    unmount();
    setLocale('zh-CN');
    ({ container } = render(StatusBadge, props));
    const b = container.querySelector('.badge')!;
    expect(b.textContent).toContain('✗ 失败');
    expect(b.getAttribute('title')).toContain('没有任何成功的响应');
  });
});
