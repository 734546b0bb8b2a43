import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import SecretsPage from './SecretsPage.svelte';
import { setLocale } from '../lib/i18n.svelte';

const VALUE = 'sk-live-0a1b2c3d';

afterEach(() => {
  vi.unstubAllGlobals();
  setLocale('en');
});

function server() {
  const store = new Map<string, string>([['API_KEY', 'old']]);
  const f = vi.fn(async (url: string, init: RequestInit = {}) => {
    const json = (status: number, body?: unknown) =>
      new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
    const m = url.match(/^\/api\/secrets\/(\w+)$/);
    if (url === '/api/secrets' && (init.method ?? 'GET') === 'GET') {
      const items = [...store.keys()].sort().map((name) => ({ name, created_at: '2026-12-01T10:00:00Z', updated_at: '2026-12-01T10:00:00Z' }));
      return json(200, { items, total: items.length });
    }
    if (m && init.method === 'PUT') {
      const created = !store.has(m[1]);
      store.set(m[1], JSON.parse(String(init.body)).value);
      return json(created ? 201 : 200, { name: m[1], created_at: '2026-12-01T10:00:00Z', updated_at: '2026-12-01T10:00:00Z' });
    }
    if (m && init.method === 'DELETE') {
      store.delete(m[1]);
      return json(204);
    }
    return json(404, { error: { code: 'not_found', message: 'no' } });
  });
  vi.stubGlobal('fetch', f);
  return { f, store };
}

describe('SecretsPage', () => {
  it('lists names, sets, replaces and deletes values, and never shows one', async () => {
    const { store } = server();
    const { container } = render(SecretsPage);
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('[data-testid=secret-API_KEY]')).not.toBeNull());
    expect(q('[data-testid=secret-API_KEY]')!.textContent).toContain('{{secret.API_KEY}}');

    // set a new one: the value field is a password field, cleared after saving
    const value = q('#secret-value') as HTMLInputElement;
    expect(value.type).toBe('password');
    await fireEvent.input(q('#secret-name')!, { target: { value: 'TOKEN' } });
    await fireEvent.input(value, { target: { value: VALUE } });
    await fireEvent.submit(q('[data-testid=secret-form]')!);
    await waitFor(() => expect(q('[data-testid=secret-TOKEN]')).not.toBeNull());
    expect(store.get('TOKEN')).toBe(VALUE);
    expect(value.value).toBe('');
    expect(container.innerHTML).not.toContain(VALUE);

    // replace
    await fireEvent.click(q('[data-testid=replace-API_KEY]')!);
    const rv = q('[data-testid=replace-value]') as HTMLInputElement;
    expect(rv.type).toBe('password');
    await fireEvent.input(rv, { target: { value: 'new-' + VALUE } });
    await fireEvent.submit(rv.closest('form')!);
    await waitFor(() => expect(store.get('API_KEY')).toBe('new-' + VALUE));
    await waitFor(() => expect(q('[data-testid=replace-value]')).toBeNull());
    expect(container.innerHTML).not.toContain(VALUE);

    // delete, after confirming
    await fireEvent.click(q('[data-testid=delete-TOKEN]')!);
    const confirm = [...container.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Delete' && b.closest('[role=dialog]'));
    await fireEvent.click(confirm!);
    await waitFor(() => expect(q('[data-testid=secret-TOKEN]')).toBeNull());
    expect(store.has('TOKEN')).toBe(false);
  });

  it('refuses a bad name before asking the server, in both languages', async () => {
    const { f } = server();
    setLocale('zh-CN');
    const { container } = render(SecretsPage);
    const q = (s: string) => container.querySelector(s);
    await waitFor(() => expect(q('[data-testid=secrets-table]')).not.toBeNull());
    expect(container.textContent).toContain('密钥');
    await fireEvent.input(q('#secret-name')!, { target: { value: '9-bad' } });
    await fireEvent.input(q('#secret-value')!, { target: { value: 'x' } });
    await fireEvent.submit(q('[data-testid=secret-form]')!);
    await waitFor(() => expect(q('[data-testid=secret-error]')).not.toBeNull());
    expect(f.mock.calls.some((c) => (c[1] as RequestInit | undefined)?.method === 'PUT')).toBe(false);
  });
});
