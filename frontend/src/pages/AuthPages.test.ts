import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import App from '../App.svelte';
import LoginPage from './LoginPage.svelte';
import TokensPage from './TokensPage.svelte';
import UsersPage from './UsersPage.svelte';
import AuditPage from './AuditPage.svelte';
import { session, roleAllows } from '../lib/session.svelte';
import { detailText } from '../lib/audit';
import { api } from '../lib/api';

type Call = { url: string; method: string; body: unknown };

/** stub answers fetch from a routing function and records every call. */
function stub(route: (c: Call) => [number, unknown]) {
  const calls: Call[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init?: RequestInit) => {
      const c = { url, method: init?.method ?? 'GET', body: init?.body ? JSON.parse(String(init.body)) : undefined };
      calls.push(c);
      const [status, body] = route(c);
      return new Response(status === 204 ? null : JSON.stringify(body), { status });
    }),
  );
  return calls;
}

const unauthorized = [401, { error: { code: 'unauthorized', message: 'log in' } }] as [number, unknown];

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  session.me = null;
  session.needLogin = false;
  location.hash = '';
});

describe('session', () => {
  it('ranks roles', () => {
    expect(roleAllows('admin', 'tester')).toBe(true);
    expect(roleAllows('tester', 'tester')).toBe(true);
    expect(roleAllows('viewer', 'tester')).toBe(false);
    expect(roleAllows(undefined, 'viewer')).toBe(false);
  });

  it('any 401 asks for a login; the login answer is not one of them', async () => {
    stub((c) => (c.url === '/api/auth/login' ? [401, { error: { code: 'bad_credentials', message: 'wrong' } }] : unauthorized));
    await expect(session.login('ann', 'x')).rejects.toThrow('wrong');
    expect(session.needLogin).toBe(false);
    await expect(api.listPlans()).rejects.toThrow();
    expect(session.needLogin).toBe(true);
  });
});

describe('App with auth on', () => {
  it('shows the login page on 401, logs in, shows the user and logs out', async () => {
    let loggedIn = false;
    const calls = stub((c) => {
      if (c.url === '/api/auth/login') {
        const b = c.body as { username: string; password: string };
        if (b.password !== 'secret password') return [401, { error: { code: 'bad_credentials', message: 'wrong' } }];
        loggedIn = true;
        return [200, { user: 'ann', role: 'tester', auth_enabled: true }];
      }
      if (c.url === '/api/auth/logout') {
        loggedIn = false;
        return [204, null];
      }
      if (!loggedIn) return unauthorized;
      if (c.url === '/api/auth/me') return [200, { user: 'ann', role: 'tester', auth_enabled: true }];
      return [200, { items: [], total: 0 }];
    });
    const { container } = render(App);
    await waitFor(() => expect(container.querySelector('[data-testid=login-form]')).not.toBeNull());
    expect(container.querySelector('[data-testid=logout]')).toBeNull();

    const user = container.querySelector('[data-testid=login-user]') as HTMLInputElement;
    const pw = container.querySelector('[data-testid=login-password]') as HTMLInputElement;
    await fireEvent.input(user, { target: { value: 'ann' } });
    await fireEvent.input(pw, { target: { value: 'wrong one' } });
    await fireEvent.submit(container.querySelector('[data-testid=login-form]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=login-error]')?.textContent).toContain('Wrong user name or password'));

    await fireEvent.input(pw, { target: { value: 'secret password' } });
    await fireEvent.submit(container.querySelector('[data-testid=login-form]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=current-user]')?.textContent).toContain('ann'));
    expect(container.querySelector('[data-testid=login-form]')).toBeNull();
    expect(container.querySelector('[data-testid=nav-tokens]')).not.toBeNull();
    expect(container.querySelector('[data-testid=nav-users]')).toBeNull(); // a tester
    await waitFor(() => expect(container.querySelector('[data-testid=plans-empty]')).not.toBeNull());

    await fireEvent.click(container.querySelector('[data-testid=logout]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=login-form]')).not.toBeNull());
    expect(calls.some((c) => c.url === '/api/auth/logout' && c.method === 'POST')).toBe(true);
  });

  it('with auth off shows no login and no user, and admin pages for the local admin', async () => {
    stub((c) => (c.url === '/api/auth/me' ? [200, { user: 'local', role: 'admin', auth_enabled: false }] : [200, { items: [], total: 0 }]));
    const { container } = render(App);
    await waitFor(() => expect(container.querySelector('[data-testid=nav-users]')).not.toBeNull());
    expect(container.querySelector('[data-testid=login-form]')).toBeNull();
    expect(container.querySelector('[data-testid=current-user]')).toBeNull();
    expect(container.querySelector('[data-testid=nav-tokens]')).toBeNull();
  });
});

describe('LoginPage', () => {
  it('says when logins are rate limited', async () => {
    stub(() => [429, { error: { code: 'too_many_attempts', message: 'try again in 2m0s' } }]);
    const { container } = render(LoginPage);
    await fireEvent.input(container.querySelector('[data-testid=login-user]')!, { target: { value: 'ann' } });
    await fireEvent.input(container.querySelector('[data-testid=login-password]')!, { target: { value: 'x' } });
    await fireEvent.submit(container.querySelector('[data-testid=login-form]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=login-error]')?.textContent).toContain('try again in 2m0s'));
  });

  it('asks for both fields before calling the server', async () => {
    const calls = stub(() => [200, {}]);
    const { container } = render(LoginPage);
    await fireEvent.submit(container.querySelector('[data-testid=login-form]')!);
    expect(container.querySelector('[data-testid=login-error]')?.textContent).toContain('Enter your user name');
    expect(calls).toHaveLength(0);
  });
});

describe('TokensPage', () => {
  it('shows a new token once and revokes tokens', async () => {
    session.me = { user: 'ann', role: 'tester', auth_enabled: true };
    let tokens = [{ id: 1, user: 'ann', role: 'tester', label: 'old', created_at: '2026-12-01T10:00:00Z', last_used_at: null }];
    const calls = stub((c) => {
      if (c.url === '/api/tokens' && c.method === 'GET') return [200, { items: tokens, total: tokens.length }];
      if (c.url === '/api/tokens' && c.method === 'POST') {
        const t = { id: 2, user: 'ann', role: 'tester', label: (c.body as { label: string }).label, created_at: '2026-12-01T11:00:00Z', last_used_at: null };
        tokens = [t, ...tokens];
        return [201, { ...t, token: 'vlt_SECRET' }];
      }
      if (c.url === '/api/tokens/1' && c.method === 'DELETE') {
        tokens = tokens.filter((t) => t.id !== 1);
        return [204, null];
      }
      return [404, {}];
    });
    const nativeConfirm = vi.spyOn(window, 'confirm').mockReturnValue(true);
    const { container } = render(TokensPage);
    await waitFor(() => expect(container.querySelectorAll('[data-testid=token-row]')).toHaveLength(1));
    expect(container.querySelector('[data-testid=token-user]')).toBeNull(); // not an admin

    await fireEvent.input(container.querySelector('[data-testid=token-label]')!, { target: { value: 'ci' } });
    await fireEvent.submit(container.querySelector('[data-testid=token-form]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=token-secret]')?.textContent).toBe('vlt_SECRET'));
    expect(calls.find((c) => c.method === 'POST')?.body).toEqual({ label: 'ci' });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=token-row]')).toHaveLength(2));
    // the list never carries the secret
    const rows = [...container.querySelectorAll('[data-testid=token-row]')].map((r) => r.textContent).join();
    expect(rows).not.toContain('vlt_SECRET');

    const old = container.querySelector('[data-token-id="1"] [data-testid=token-revoke]') as HTMLButtonElement;
    await fireEvent.click(old);
    expect(container.querySelectorAll('[data-token-id="1"]')).toHaveLength(1); // asks first
    await fireEvent.click(document.querySelector('[data-testid=confirm-ok]')!);
    expect(nativeConfirm).not.toHaveBeenCalled();
    await waitFor(() => expect(container.querySelectorAll('[data-testid=token-row]')).toHaveLength(1));
    expect(calls.some((c) => c.method === 'DELETE' && c.url === '/api/tokens/1')).toBe(true);
  });
});

describe('UsersPage', () => {
  it('adds a user, names a bad field, changes a role and deletes', async () => {
    session.me = { user: 'ann', role: 'admin', auth_enabled: true };
    let users = [{ name: 'ann', role: 'admin', created_at: '2026-12-01T10:00:00Z', updated_at: '2026-12-01T10:00:00Z' }];
    const calls = stub((c) => {
      if (c.url === '/api/users' && c.method === 'GET') return [200, { items: users, total: users.length }];
      if (c.url === '/api/users' && c.method === 'POST') {
        const b = c.body as { name: string; role: string; password: string };
        if (b.password.length < 8)
          return [400, { error: { code: 'bad_request', message: 'password: at least 8 characters', fields: { password: 'at least 8 characters' } } }];
        users = [...users, { name: b.name, role: b.role, created_at: '2026-12-01T11:00:00Z', updated_at: '2026-12-01T11:00:00Z' }];
        return [201, users[users.length - 1]];
      }
      if (c.url === '/api/users/bob' && c.method === 'PATCH') {
        users = users.map((u) => (u.name === 'bob' ? { ...u, role: (c.body as { role: string }).role } : u));
        return [200, users[1]];
      }
      if (c.url === '/api/users/bob' && c.method === 'DELETE') {
        users = users.filter((u) => u.name !== 'bob');
        return [204, null];
      }
      return [404, {}];
    });
    const nativeConfirm = vi.spyOn(window, 'confirm').mockReturnValue(true);
    const { container } = render(UsersPage);
    await waitFor(() => expect(container.querySelectorAll('[data-testid=user-row]')).toHaveLength(1));

    await fireEvent.input(container.querySelector('[data-testid=user-name]')!, { target: { value: 'bob' } });
    await fireEvent.input(container.querySelector('[data-testid=user-password]')!, { target: { value: 'short' } });
    await fireEvent.submit(container.querySelector('[data-testid=user-form]')!);
    await waitFor(() => expect(container.querySelector('.field-error')?.textContent).toBe('at least 8 characters'));

    await fireEvent.input(container.querySelector('[data-testid=user-password]')!, { target: { value: 'long enough pw' } });
    await fireEvent.submit(container.querySelector('[data-testid=user-form]')!);
    await waitFor(() => expect(container.querySelectorAll('[data-testid=user-row]')).toHaveLength(2));
    expect(calls.filter((c) => c.method === 'POST').at(-1)?.body).toEqual({ name: 'bob', role: 'tester', password: 'long enough pw' });
    expect(container.textContent).not.toContain('long enough pw');

    const sel = container.querySelector('[data-user=bob] [data-testid=user-row-role]') as HTMLSelectElement;
    sel.value = 'viewer';
    await fireEvent.change(sel);
    await waitFor(() => expect(calls.some((c) => c.method === 'PATCH' && (c.body as { role: string }).role === 'viewer')).toBe(true));

    await fireEvent.click(container.querySelector('[data-user=bob] [data-testid=user-delete]')!);
    expect(container.querySelector('[data-testid=confirm-dialog]')?.textContent).toContain('Delete bob');
    await fireEvent.click(container.querySelector('[data-testid=confirm-ok]')!);
    expect(nativeConfirm).not.toHaveBeenCalled();
    await waitFor(() => expect(container.querySelectorAll('[data-testid=user-row]')).toHaveLength(1));
  });
});

describe('AuditPage', () => {
  it('lists entries with the run’s plan and target hosts, and pages', async () => {
    const calls = stub(() => [
      200,
      {
        items: [{ id: 9, at: '2026-12-01T10:00:00Z', actor: 'tom', action: 'run.start', target: 'run 4',
          detail: { run_id: 4, plan_id: 1, plan_name: 'Demo', hosts: ['127.0.0.1:8090'] }, addr: '127.0.0.1' }],
        total: 120,
      },
    ]);
    const { container } = render(AuditPage, { query: new URLSearchParams('offset=50') });
    await waitFor(() => expect(container.querySelectorAll('[data-testid=audit-row]')).toHaveLength(1));
    expect(calls[0].url).toBe('/api/audit?limit=50&offset=50');
    expect(container.textContent).toContain('Demo (#1) → 127.0.0.1:8090');
    expect(container.textContent).toContain('51–51 of 120');
    (container.querySelector('[data-testid=audit-next]') as HTMLButtonElement).click();
    expect(location.hash).toBe('#/audit?offset=100');
  });

  it('detailText', () => {
    expect(detailText({ user: 'ci', label: 'nightly' })).toBe('user=ci label=nightly');
    expect(detailText(null)).toBe('');
  });
});
