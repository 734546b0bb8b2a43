import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, activeRun, errorMessage, liveURL, request } from './api';

function reply(status: number, body: unknown, contentType = 'application/json') {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return vi.fn(async (_url: string, _init?: RequestInit) => new Response(status === 204 ? null : text, { status, headers: { 'Content-Type': contentType } }));
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('request', () => {
  it('decodes JSON and sends JSON bodies', async () => {
    const f = reply(201, { id: 4, name: 'p' });
    vi.stubGlobal('fetch', f);
    const plan = await api.createPlan({ name: 'p', requests: [], load: {} });
    expect(plan).toEqual({ id: 4, name: 'p' });
    const [url, init] = f.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('/api/plans');
    expect(init.method).toBe('POST');
    expect(JSON.parse(init.body as string)).toEqual({ name: 'p', requests: [], load: {} });
    expect((init.headers as Record<string, string>)['Content-Type']).toBe('application/json');
  });

  it('sends Content-Type: application/json on every state change, body or not, and not on reads', async () => {
    const f = reply(201, { id: 9 });
    vi.stubGlobal('fetch', f);
    await api.startRun(1);
    await request('DELETE', '/api/plans/1');
    await request('GET', '/api/plans');
    const calls = f.mock.calls as unknown as [string, RequestInit][];
    for (const [, init] of calls.slice(0, 2)) {
      expect(init.body).toBeUndefined();
      expect((init.headers as Record<string, string>)['Content-Type']).toBe('application/json');
    }
    expect((calls[2][1].headers as Record<string, string>)['Content-Type']).toBeUndefined();
  });

  it('turns the error envelope into an ApiError with code, message and fields', async () => {
    vi.stubGlobal(
      'fetch',
      reply(400, { error: { code: 'invalid_plan', message: 'the plan has 2 problems', fields: { 'load.vus': 'must be at least 1', 'requests[0].url': 'is required' } } }),
    );
    const err = await api.updatePlan(3, { name: 'x', requests: [], load: {} }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('invalid_plan');
    expect(err.message).toBe('the plan has 2 problems');
    expect(err.fields).toEqual({ 'load.vus': 'must be at least 1', 'requests[0].url': 'is required' });
  });

  it('gives errors without fields an empty fields object', async () => {
    vi.stubGlobal('fetch', reply(409, { error: { code: 'run_in_progress', message: 'run 7 is in progress' } }));
    const err = (await api.startRun(1).catch((e) => e)) as ApiError;
    expect(err.status).toBe(409);
    expect(err.code).toBe('run_in_progress');
    expect(err.fields).toEqual({});
  });

  it('describes non-JSON error bodies (a proxy page, a plain-text 502)', async () => {
    vi.stubGlobal('fetch', reply(502, 'Bad Gateway', 'text/plain'));
    const err = (await api.listPlans().catch((e) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(502);
    expect(err.code).toBe('http_502');
    expect(err.message).toContain('GET /api/plans');
    expect(err.message).toContain('Bad Gateway');
  });

  it('reports an unreachable server as a network error', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => {
        throw new TypeError('Failed to fetch');
      }),
    );
    const err = (await api.listRuns().catch((e) => e)) as ApiError;
    expect(err.status).toBe(0);
    expect(err.code).toBe('network');
    expect(errorMessage(err)).toMatch(/Cannot reach the Volley server.*Failed to fetch/);
  });

  it('rejects a 200 whose body is not JSON', async () => {
    vi.stubGlobal('fetch', reply(200, '<html>index</html>', 'text/html'));
    const err = (await request('GET', '/api/plans').catch((e) => e)) as ApiError;
    expect(err.code).toBe('bad_response');
  });

  it('returns undefined for 204', async () => {
    vi.stubGlobal('fetch', reply(204, ''));
    await expect(api.deletePlan(2)).resolves.toBeUndefined();
  });

  it('builds the runs query from the filter, leaving out empty values', async () => {
    const f = reply(200, { items: [], total: 0 });
    vi.stubGlobal('fetch', f);
    await api.listRuns({ plan_id: 3, status: '', limit: 25, offset: 50 });
    expect(f.mock.calls[0][0]).toBe('/api/runs?plan_id=3&limit=25&offset=50');
  });
});

describe('activeRun', () => {
  it('finds the running run, and is null when the lookup fails', async () => {
    vi.stubGlobal('fetch', reply(200, { items: [{ id: 9, status: 'running' }], total: 1 }));
    expect((await activeRun())?.id).toBe(9);
    vi.stubGlobal('fetch', reply(500, { error: { code: 'internal', message: 'boom' } }));
    expect(await activeRun()).toBeNull();
  });
});

describe('liveURL', () => {
  it('follows the page scheme', () => {
    expect(liveURL(7, { protocol: 'http:', host: '127.0.0.1:8181' })).toBe('ws://127.0.0.1:8181/api/runs/7/live');
    expect(liveURL(7, { protocol: 'https:', host: 'volley.example' })).toBe('wss://volley.example/api/runs/7/live');
  });
});

describe('prefetched answers', () => {
  it('uses an answer index.html started, once, for its exact URL', async () => {
    const g = globalThis as { __volleyPrefetch?: Record<string, Promise<Response>> };
    g.__volleyPrefetch = { '/api/plans': Promise.resolve(new Response('{"items":[],"total":7}', { status: 200 })) };
    const calls: string[] = [];
    const orig = globalThis.fetch;
    globalThis.fetch = (async (u: string) => {
      calls.push(String(u));
      return new Response('{"items":[],"total":1}', { status: 200 });
    }) as typeof fetch;
    try {
      const first = await request<{ total: number }>('GET', '/api/plans');
      const second = await request<{ total: number }>('GET', '/api/plans');
      expect(first.total).toBe(7);
      expect(second.total).toBe(1);
      expect(calls).toEqual(['/api/plans']);
    } finally {
      globalThis.fetch = orig;
      delete g.__volleyPrefetch;
    }
  });
});
