import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import App from './App.svelte';
import { setLocale, STORAGE_KEY } from './lib/i18n.svelte';

afterEach(() => {
  setLocale('en');
  vi.unstubAllGlobals();
  location.hash = '';
});

describe('App', () => {
  it('switches the language from the nav bar and remembers it', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify({ items: [], total: 0 }), { status: 200 })));
    location.hash = '#/runs';
    const { container } = render(App);
    const nav = () => container.querySelector('.topbar nav')!.textContent;
    await waitFor(() => expect(container.querySelector('h1')?.textContent).toBe('History'));
    expect(nav()).toContain('Plans');

    const sw = container.querySelector('[data-testid=lang-switch]') as HTMLSelectElement;
    expect(sw.value).toBe('en');
    sw.value = 'zh-CN';
    await fireEvent.change(sw);
    await waitFor(() => expect(container.querySelector('h1')?.textContent).toBe('历史记录'));
    expect(nav()).toContain('测试计划');
    expect(localStorage.getItem(STORAGE_KEY)).toBe('zh-CN');
    expect((container.querySelector('[data-testid=lang-switch]') as HTMLSelectElement).value).toBe('zh-CN');
  });

  it('routes #/compare to the compare page', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify({ items: [], total: 0 }), { status: 200 })));
    location.hash = '#/compare';
    const { container } = render(App);
    // the page loads on first use: on a busy machine that takes more than waitFor's default second
    await waitFor(() => expect(container.querySelector('[data-testid=compare-empty]')).not.toBeNull(), { timeout: 10_000 });
  });

  it('routes #/secrets to the secrets page, linked from the nav bar', async () => {
    // the local admin (no users): GET /api/auth/me names the role; the secrets list is empty
    vi.stubGlobal('fetch', vi.fn(async (path: string) => new Response(JSON.stringify(String(path).endsWith('/api/auth/me') ? { user: 'local', role: 'admin', auth_enabled: false } : { items: [], total: 0 }), { status: 200 })));
    location.hash = '#/secrets';
    const { container } = render(App);
    await waitFor(() => expect(container.querySelector('[data-testid=secrets-empty]')).not.toBeNull(), { timeout: 10_000 });
    expect(container.querySelector('[data-testid=nav-secrets]')!.classList.contains('active')).toBe(true);
  });
});
