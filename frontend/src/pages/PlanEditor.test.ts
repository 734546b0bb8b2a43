import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import PlanEditor from './PlanEditor.svelte';

type Handler = (url: string, init: RequestInit) => { status: number; body?: unknown };

function mockFetch(handler: Handler) {
  const f = vi.fn(async (url: string, init: RequestInit = {}) => {
    const { status, body } = handler(url, init);
    return new Response(status === 204 || body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { 'Content-Type': 'application/json' },
    });
  });
  vi.stubGlobal('fetch', f);
  return f;
}

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

describe('PlanEditor', () => {
  it('shows each validation problem next to its input and the rest in the banner', async () => {
    const f = mockFetch(() => ({
      status: 400,
      body: {
        error: {
          code: 'invalid_plan',
          message: 'the plan has 4 problems',
          fields: {
            'load.vus': 'must be at least 1',
            'requests[0].url': 'must start with http:// or https://',
            'thresholds[0]': '"p95<1" is not a threshold',
            'load.vuz': 'unknown field',
          },
        },
      },
    }));
    const { container } = render(PlanEditor);

    await fireEvent.input(screen.getByLabelText('Name'), { target: { value: 'bad plan' } });
    await fireEvent.input(container.querySelector('#load-vus')!, { target: { value: '0' } });
    await fireEvent.input(container.querySelector('#req-0-url')!, { target: { value: 'ftp://x' } });
    await fireEvent.input(container.querySelector('#thresholds')!, { target: { value: 'p95<1' } });
    await fireEvent.click(container.querySelector('[data-testid=save-plan]')!);

    await waitFor(() => expect(container.querySelector('[data-field-error="load.vus"]')).not.toBeNull());
    expect(container.querySelector('[data-field-error="load.vus"]')!.textContent).toBe('must be at least 1');
    expect(container.querySelector('[data-field-error="requests[0].url"]')!.textContent).toContain('must start with http://');
    expect(container.querySelector('[data-field-error="thresholds[0]"]')!.textContent).toContain('p95<1');
    expect(container.querySelector('#load-vus')!.getAttribute('aria-invalid')).toBe('true');
    expect(container.querySelector('#load-duration')!.getAttribute('aria-invalid')).toBe('false');

    // the inline error sits in the same field as its input
    const vusField = container.querySelector('#load-vus')!.closest('.field')!;
    expect(vusField.querySelector('[data-field-error="load.vus"]')).not.toBeNull();

    const banner = container.querySelector('[data-testid=form-error]')!;
    expect(banner.textContent).toContain('the plan has 4 problems');
    const unmatched = container.querySelector('[data-testid=form-error-unmatched]')!;
    expect(unmatched.textContent).toContain('load.vuz');
    expect(unmatched.textContent).toContain('unknown field');
    expect(unmatched.textContent).not.toContain('load.vus:');

    // what was sent: typed numbers and the edited values
    const [url, init] = f.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('/api/plans');
    expect(init.method).toBe('POST');
    const sent = JSON.parse(init.body as string);
    expect(sent.name).toBe('bad plan');
    expect(sent.load).toEqual({ executor: 'constant-vus', vus: 0, duration: '30s' });
    expect(sent.requests[0].url).toBe('ftp://x');
    expect(sent.thresholds).toEqual(['p95<1']);
    expect(location.hash).toBe('');
  });

  it('adds, edits and removes monitors, sends them and shows their errors by path', async () => {
    const f = mockFetch(() => ({
      status: 400,
      body: { error: { code: 'invalid_plan', message: 'the plan has 2 problems', fields: { 'monitors[1].url': 'must be an http:// or https:// URL', 'monitors[1].metric': 'needs a metric', 'monitors[0].token': 'must be a secret reference' } } },
    }));
    const { container } = render(PlanEditor);
    await fireEvent.input(screen.getByLabelText('Name'), { target: { value: 'm' } });
    for (let k = 0; k < 3; k++) await fireEvent.click(container.querySelector('[data-testid=add-monitor]')!);
    await fireEvent.click(container.querySelector('[aria-label="remove monitor 1"]')!);
    expect(container.querySelectorAll('[data-testid^=monitor-]')).toHaveLength(2);
    expect(container.querySelector('#mon-1-metric')).toBeNull();
    await fireEvent.change(container.querySelector('#mon-1-type')!, { target: { value: 'custom' } });
    await fireEvent.input(container.querySelector('#mon-1-url')!, { target: { value: 'ftp://x' } });
    await fireEvent.input(container.querySelector('#mon-1-labels')!, { target: { value: 'job=nginx' } });
    await fireEvent.input(container.querySelector('#mon-0-token')!, { target: { value: 'cleartext' } });
    await fireEvent.click(container.querySelector('[data-testid=save-plan]')!);

    await waitFor(() => expect(container.querySelector('[data-field-error="monitors[1].url"]')).not.toBeNull());
    expect(container.querySelector('#mon-1-url')!.closest('.field')!.querySelector('[data-field-error="monitors[1].url"]')).not.toBeNull();
    expect(container.querySelector('#mon-1-metric')!.closest('.field')!.querySelector('[data-field-error="monitors[1].metric"]')).not.toBeNull();
    expect(container.querySelector('#mon-0-token')!.closest('.field')!.querySelector('[data-field-error="monitors[0].token"]')).not.toBeNull();
    expect(container.querySelector('[data-testid=form-error-unmatched]')).toBeNull();
    const sent = JSON.parse((f.mock.calls[0] as unknown as [string, RequestInit])[1].body as string);
    expect(sent.monitors).toEqual([
      { type: 'node', url: 'http://127.0.0.1:9100/metrics', token: 'cleartext' },
      { type: 'custom', url: 'ftp://x', labels: { job: 'nginx' } },
    ]);
  });

  it('loads an existing plan, saves it with PUT and keeps fields it does not show', async () => {
    const plan = {
      id: 5,
      name: 'api',
      created_at: '2026-11-29T10:00:00Z',
      updated_at: '2026-11-29T10:00:00Z',
      plan: {
        name: 'api',
        requests: [{ name: 'get', method: 'POST', url: 'http://127.0.0.1:8090/api', headers: { 'Content-Type': 'application/json' }, body: '{}', weight: 2, checks: [{ type: 'status', op: 'eq', value: 201 }] }],
        load: { executor: 'per-vu-iterations', vus: 4, iterations: 50, max_duration: '10m0s', graceful_stop: '5s' },
        http: { timeout: '2s', keep_alive: true, follow_redirects: true, max_redirects: 3, insecure_skip_verify: false },
        thresholds: [],
      },
    };
    const f = mockFetch((url, init) => {
      if (init.method === 'PUT') return { status: 200, body: { ...plan, plan: JSON.parse(init.body as string) } };
      return { status: 200, body: plan };
    });
    const { container } = render(PlanEditor, { id: '5' });
    await waitFor(() => expect((container.querySelector('#plan-name') as HTMLInputElement)?.value).toBe('api'));
    expect((container.querySelector('#req-0-method') as HTMLSelectElement).value).toBe('POST');
    expect((container.querySelector('#load-executor') as HTMLSelectElement).value).toBe('per-vu-iterations');
    expect(container.querySelector('#load-duration')).toBeNull();
    expect((container.querySelector('#load-iterations') as HTMLInputElement).value).toBe('50');

    await fireEvent.input(container.querySelector('#load-iterations')!, { target: { value: '75' } });
    await fireEvent.click(container.querySelector('[data-testid=save-plan]')!);
    await waitFor(() => expect(screen.getByRole('status').textContent).toContain('Saved'));

    const put = f.mock.calls.find((c) => (c[1] as RequestInit | undefined)?.method === 'PUT')!;
    expect(put[0]).toBe('/api/plans/5');
    const sent = JSON.parse((put[1] as RequestInit).body as string);
    expect(sent.load).toEqual({ executor: 'per-vu-iterations', vus: 4, iterations: 75, max_duration: '10m0s', graceful_stop: '5s' });
    expect(sent.requests[0]).toMatchObject({ weight: 2, checks: [{ type: 'status', op: 'eq', value: 201 }], headers: { 'Content-Type': 'application/json' } });
    expect(sent.http).toMatchObject({ follow_redirects: true, max_redirects: 3, timeout: '2s' });
  });

  it('shows secret header values masked, keeps the placeholder when untouched and marks headers secret', async () => {
    const plan = {
      id: 6,
      name: 'sec',
      created_at: '2026-11-29T10:00:00Z',
      updated_at: '2026-11-29T10:00:00Z',
      plan: {
        name: 'sec',
        requests: [{ name: 'r', method: 'GET', url: 'http://127.0.0.1:8090/', headers: { Authorization: '********', 'X-Api-Key': '********', 'X-Trace': 't1' }, body: '', weight: 1, secret_headers: ['X-Api-Key'] }],
        load: { executor: 'constant-vus', vus: 1, duration: '10s', graceful_stop: '5s' },
        http: { timeout: '10s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
        thresholds: [],
      },
    };
    const f = mockFetch((url, init) => {
      if (init.method === 'PUT') return { status: 200, body: { ...plan, plan: JSON.parse(init.body as string) } };
      return { status: 200, body: plan };
    });
    const { container } = render(PlanEditor, { id: '6' });
    const q = (s: string) => container.querySelector(s) as HTMLInputElement;
    await waitFor(() => expect(q('#plan-name')?.value).toBe('sec'));
    expect(q('#req-0-header-0-value').type).toBe('password');
    expect(q('#req-0-header-0-value').value).toBe('********');
    expect(q('[data-testid=req-0-header-0-secret]').disabled).toBe(true); // Authorization: always secret
    expect(q('#req-0-header-1-value').type).toBe('password');
    expect(q('[data-testid=req-0-header-1-secret]').checked).toBe(true);
    expect(q('#req-0-header-2-value').type).toBe('text');
    expect(q('#req-0-header-2-value').value).toBe('t1');

    // mark X-Trace secret; leave the masked values untouched
    await fireEvent.click(q('[data-testid=req-0-header-2-secret]'));
    expect(q('#req-0-header-2-value').type).toBe('password');
    await fireEvent.click(container.querySelector('[data-testid=save-plan]')!);
    await waitFor(() => expect(screen.getByRole('status').textContent).toContain('Saved'));
    const put = f.mock.calls.find((c) => (c[1] as RequestInit | undefined)?.method === 'PUT')!;
    const sent = JSON.parse((put[1] as RequestInit).body as string);
    expect(sent.requests[0].headers).toEqual({ Authorization: '********', 'X-Api-Key': '********', 'X-Trace': 't1' });
    expect(sent.requests[0].secret_headers).toEqual(['X-Api-Key', 'X-Trace']);
  });

  it('Save & run on 409 shows the message with a link to the active run', async () => {
    mockFetch((url, init) => {
      if (url === '/api/plans' && init.method === 'POST') return { status: 201, body: { id: 8, name: 'p', plan: {} } };
      if (url === '/api/plans/8/runs') return { status: 409, body: { error: { code: 'run_in_progress', message: 'run 3 is still running' } } };
      if (url.startsWith('/api/runs?')) return { status: 200, body: { items: [{ id: 3, status: 'running' }], total: 1 } };
      return { status: 404, body: { error: { code: 'not_found', message: 'no' } } };
    });
    const { container } = render(PlanEditor);
    await fireEvent.input(container.querySelector('#plan-name')!, { target: { value: 'p' } });
    await fireEvent.click(container.querySelector('[data-testid=save-and-run]')!);
    await waitFor(() => expect(container.querySelector('[data-testid=form-error]')?.textContent).toContain('run 3 is still running'));
    const link = container.querySelector('[data-testid=form-error] a') as HTMLAnchorElement;
    expect(link.getAttribute('href')).toBe('#/runs/3');
  });

  it('shows a load failure instead of a blank page', async () => {
    mockFetch(() => ({ status: 404, body: { error: { code: 'not_found', message: 'plan 99 not found' } } }));
    render(PlanEditor, { id: '99' });
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('plan 99 not found'));
  });

  it('shows the fields of each executor, sends only those, and maps stage errors to their cells', async () => {
    const f = mockFetch(() => ({
      status: 400,
      body: {
        error: {
          code: 'invalid_plan',
          message: 'the plan has 2 problems',
          fields: {
            'load.stages[1].duration': 'must be positive',
            'load.stages[0].target': 'must be a whole number',
          },
        },
      },
    }));
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel);
    await fireEvent.input(q('#plan-name')!, { target: { value: 'ramp' } });
    await fireEvent.change(q('#load-executor')!, { target: { value: 'ramping-vus' } });
    expect(q('#load-vus')).toBeNull();
    expect(q('#load-duration')).toBeNull();
    expect(q('#load-start-vus')).not.toBeNull();
    expect(q('#load-graceful-stop')).not.toBeNull();
    expect(q('[data-testid=executor-help]')!.textContent).toContain('closed model');
    expect(container.querySelectorAll('[data-testid=stage-row]')).toHaveLength(3);
    await fireEvent.click(q('[data-testid=add-stage]')!);
    expect(container.querySelectorAll('[data-testid=stage-row]')).toHaveLength(4);
    await fireEvent.click(container.querySelector('[aria-label="remove stage 4"]')!);
    await fireEvent.input(q('#load-stages-0-target')!, { target: { value: 'lots' } });
    await fireEvent.input(q('#load-stages-1-duration')!, { target: { value: '' } });
    await fireEvent.click(q('[data-testid=save-plan]')!);

    await waitFor(() => expect(q('[data-field-error="load.stages[1].duration"]')).not.toBeNull());
    expect(q('#load-stages-1-duration')!.getAttribute('aria-invalid')).toBe('true');
    expect(q('#load-stages-0-target')!.getAttribute('aria-invalid')).toBe('true');
    expect(q('#load-stages-0-duration')!.getAttribute('aria-invalid')).toBe('false');
    // inline, in the stage's own cell
    expect(q('#load-stages-0-target')!.closest('td')!.querySelector('[data-field-error="load.stages[0].target"]')).not.toBeNull();
    expect(q('[data-testid=form-error-unmatched]')).toBeNull();

    const sent = JSON.parse((f.mock.calls[0][1] as RequestInit).body as string);
    expect(sent.load).toEqual({
      executor: 'ramping-vus',
      stages: [
        { duration: '30s', target: 'lots' },
        { duration: '', target: 20 },
        { duration: '30s', target: 0 },
      ],
    });
  });

  it('edits arrival-rate and sweep plans with their own inputs', async () => {
    const f = mockFetch((_url, init) => ({ status: 201, body: { id: 3, name: 'x', plan: JSON.parse(init.body as string) } }));
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel);
    await fireEvent.input(q('#plan-name')!, { target: { value: 'open' } });
    await fireEvent.change(q('#load-executor')!, { target: { value: 'constant-arrival-rate' } });
    expect(q('[data-testid=executor-help]')!.textContent).toContain('open model');
    expect(q('[data-testid=executor-help]')!.textContent).toContain('dropped iterations');
    for (const id of ['#load-rate', '#load-time-unit', '#load-duration', '#load-pre-allocated-vus', '#load-max-vus']) expect(q(id), id).not.toBeNull();
    expect(q('#load-vus')).toBeNull();
    await fireEvent.input(q('#load-rate')!, { target: { value: '200' } });
    await fireEvent.input(q('#load-duration')!, { target: { value: '8s' } });
    await fireEvent.input(q('#load-pre-allocated-vus')!, { target: { value: '5' } });
    await fireEvent.input(q('#load-max-vus')!, { target: { value: '50' } });
    await fireEvent.click(q('#http-follow-redirects')!);
    await fireEvent.input(q('#http-max-redirects')!, { target: { value: '3' } });
    await fireEvent.click(q('[data-testid=save-plan]')!);
    await waitFor(() => expect(f).toHaveBeenCalled());
    let sent = JSON.parse((f.mock.calls[0][1] as RequestInit).body as string);
    expect(sent.load).toEqual({ executor: 'constant-arrival-rate', rate: 200, duration: '8s', pre_allocated_vus: 5, max_vus: 50 });
    expect(sent.http).toEqual({ timeout: '10s', keep_alive: true, follow_redirects: true, max_redirects: 3 });

    f.mockClear();
    await fireEvent.change(q('#load-executor')!, { target: { value: 'concurrency-sweep' } });
    await fireEvent.input(q('#load-levels')!, { target: { value: '1, 5, 20' } });
    await fireEvent.input(q('#load-step-duration')!, { target: { value: '3s' } });
    await fireEvent.click(q('[data-testid=save-plan]')!);
    await waitFor(() => expect(f).toHaveBeenCalled());
    sent = JSON.parse((f.mock.calls[0][1] as RequestInit).body as string);
    expect(sent.load).toEqual({ executor: 'concurrency-sweep', levels: [1, 5, 20], step_duration: '3s' });
  });

  it('names the level and the threshold line an error is about, with a space after the colon', async () => {
    mockFetch(() => ({
      status: 400,
      body: {
        error: {
          code: 'invalid_plan',
          message: 'the plan has 2 problems',
          fields: { 'load.levels[1]': 'must be 1–100000 VUs', 'thresholds[0]': '"p95 < 200" is not a threshold' },
        },
      },
    }));
    const { container } = render(PlanEditor);
    await fireEvent.change(container.querySelector('#load-executor')!, { target: { value: 'concurrency-sweep' } });
    await fireEvent.input(container.querySelector('#load-levels')!, { target: { value: '10, 0' } });
    await fireEvent.input(container.querySelector('#thresholds')!, { target: { value: 'p95 < 200' } });
    await fireEvent.click(container.querySelector('[data-testid=save-plan]')!);
    await waitFor(() => expect(container.querySelector('[data-field-error="load.levels[1]"]')).not.toBeNull());
    expect(container.querySelector('[data-field-error="load.levels[1]"]')!.textContent).toBe('level 2 (0): must be 1–100000 VUs');
    expect(container.querySelector('#load-levels')!.getAttribute('aria-invalid')).toBe('true');
    expect(container.querySelector('[data-field-error="thresholds[0]"]')!.textContent).toBe('Threshold 1: "p95 < 200" is not a threshold');
  });
});

describe('PlanEditor scenarios', () => {
  const sentBody = (f: ReturnType<typeof mockFetch>, method: string) => {
    const call = f.mock.calls.find((c) => (c[1] as RequestInit | undefined)?.method === method)!;
    return (call[1] as RequestInit).body as string;
  };

  it('adding a check row and an extract rule and saving sends them, typed', async () => {
    const f = mockFetch((_url, init) => ({ status: 201, body: { id: 4, name: 'x', plan: JSON.parse(init.body as string) } }));
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel) as HTMLInputElement;
    await fireEvent.input(q('#plan-name'), { target: { value: 'checks' } });

    await fireEvent.click(q('[data-testid=add-check-0]'));
    expect(container.querySelectorAll('[data-testid=check-row]')).toHaveLength(1);
    expect(q('#req-0-check-0-type').value).toBe('status');
    await fireEvent.input(q('#req-0-check-0-value'), { target: { value: '404' } });

    // a second check: json, a number value
    await fireEvent.click(q('[data-testid=add-check-0]'));
    await fireEvent.change(q('#req-0-check-1-type'), { target: { value: 'json' } });
    expect(q('#req-0-check-1-path')).not.toBeNull();
    expect(q('#req-0-check-1-name')).toBeNull();
    await fireEvent.input(q('#req-0-check-1-path'), { target: { value: 'data.count' } });
    await fireEvent.change(q('#req-0-check-1-op'), { target: { value: 'gt' } });
    await fireEvent.change(q('#req-0-check-1-value-type'), { target: { value: 'number' } });
    await fireEvent.input(q('#req-0-check-1-value'), { target: { value: '3' } });

    // a third: header exists (no value input), then removed again
    await fireEvent.click(q('[data-testid=add-check-0]'));
    await fireEvent.change(q('#req-0-check-2-type'), { target: { value: 'header' } });
    await fireEvent.change(q('#req-0-check-2-op'), { target: { value: 'exists' } });
    expect(q('#req-0-check-2-value')).toBeNull();
    await fireEvent.click(container.querySelector('[aria-label="remove check 3"]')!);

    await fireEvent.click(q('[data-testid=add-extract-0]'));
    await fireEvent.input(q('#req-0-extract-0-var'), { target: { value: 'title' } });
    await fireEvent.change(q('#req-0-extract-0-from'), { target: { value: 'regex' } });
    await fireEvent.input(q('#req-0-extract-0-pattern'), { target: { value: '<h1>(.*)</h1>' } });
    expect(q('[data-testid=variables-hint]').textContent).toContain('{{title}}');

    await fireEvent.click(q('[data-testid=save-plan]'));
    await waitFor(() => expect(f).toHaveBeenCalled());
    const sent = JSON.parse(sentBody(f, 'POST'));
    expect(sent.requests[0].checks).toEqual([
      { type: 'status', op: 'eq', value: 404 },
      { type: 'json', op: 'gt', value: 3, path: 'data.count' },
    ]);
    expect(sent.requests[0].extract).toEqual([{ var: 'title', from: 'regex', pattern: '<h1>(.*)</h1>' }]);
  });

  const scenarioPlan = {
    name: 'login flow',
    requests: [
      {
        name: 'login',
        method: 'POST',
        url: 'http://127.0.0.1:8090/login',
        body: '{"user":"{{user}}"}',
        weight: 2,
        think_time: '500ms-2s',
        checks: [
          { type: 'status', op: 'eq', value: 200 },
          { type: 'json', op: 'eq', value: true, path: 'data.ok' },
        ],
        extract: [{ var: 'token', from: 'json', path: 'data.token' }],
      },
      { name: 'items', method: 'GET', url: 'http://127.0.0.1:8090/items', headers: { Authorization: 'Bearer {{token}}' }, body: '', weight: 1 },
    ],
    flow: 'sequence',
    think_time: '1s',
    data: { csv: 'user,pass\nann,a1\nbob,b2\n', mode: 'per-vu' },
    load: { executor: 'constant-vus', vus: 10, duration: '30s', graceful_stop: '5s' },
    http: { timeout: '10s', keep_alive: true, follow_redirects: false, max_redirects: 10, insecure_skip_verify: false },
    thresholds: ['p(95)<200ms', { expr: 'p(95)<300ms', request: 'login', abort_on_fail: true }],
  };

  it('opens a scenario plan, shows its fields, and saves it unchanged as the identical JSON', async () => {
    const stored = { id: 6, name: 'login flow', created_at: '', updated_at: '', plan: scenarioPlan };
    const f = mockFetch((_url, init) => (init.method === 'PUT' ? { status: 200, body: { ...stored, plan: JSON.parse(init.body as string) } } : { status: 200, body: stored }));
    const { container } = render(PlanEditor, { id: '6' });
    const q = (sel: string) => container.querySelector(sel) as HTMLInputElement;
    await waitFor(() => expect(q('#plan-name')?.value).toBe('login flow'));
    expect(q('#flow').value).toBe('sequence');
    expect(q('[data-testid=flow-help]').textContent).toContain('every request in order');
    expect(q('#think-time').value).toBe('1s');
    expect(q('#data-csv').value).toBe('user,pass\nann,a1\nbob,b2\n');
    expect(q('#data-mode').value).toBe('per-vu');
    expect(q('[data-testid=data-preview]').textContent).toBe('columns: user, pass · 2 rows');
    expect(q('[data-testid=variables-hint]').textContent).toMatch(/\{\{user\}\}.*\{\{pass\}\}.*\{\{token\}\}/);
    expect(q('#req-0-weight')).toBeNull(); // sequence flow: no weights
    expect(q('#req-0-think-time').value).toBe('500ms-2s');
    expect(q('#req-0-check-1-value-type').value).toBe('true');
    expect(q('#req-0-check-1-value')).toBeNull();
    expect(q('#req-0-extract-0-path').value).toBe('data.token');
    expect(q('#threshold-1-request').value).toBe('login');
    expect(q('#threshold-1-abort').checked).toBe(true);
    expect(q('#threshold-0-request').value).toBe('');

    await fireEvent.change(q('#flow'), { target: { value: 'weighted' } });
    expect(q('#req-0-weight').value).toBe('2');
    expect(q('[data-testid=req-0-share]').textContent).toContain('67% share');
    await fireEvent.change(q('#flow'), { target: { value: 'sequence' } });

    await fireEvent.click(q('[data-testid=save-plan]'));
    await waitFor(() => expect(screen.getByRole('status').textContent).toContain('Saved'));
    expect(sentBody(f, 'PUT')).toBe(JSON.stringify(scenarioPlan));
  });

  it('threshold lines get a request and abort; options follow their line as the text changes', async () => {
    const f = mockFetch((_url, init) => ({ status: 201, body: { id: 4, name: 'x', plan: JSON.parse(init.body as string) } }));
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel) as HTMLInputElement;
    await fireEvent.input(q('#plan-name'), { target: { value: 't' } });
    await fireEvent.input(q('#req-0-name'), { target: { value: 'home' } });
    await fireEvent.input(q('#thresholds'), { target: { value: 'p(95)<200ms\nerror_rate<1%' } });
    expect(container.querySelectorAll('[data-testid=threshold-row]')).toHaveLength(2);
    const options = [...container.querySelectorAll('#threshold-1-request option')].map((o) => o.textContent);
    expect(options).toEqual(['all requests', 'home']);
    await fireEvent.change(q('#threshold-1-request'), { target: { value: 'home' } });
    await fireEvent.click(q('#threshold-1-abort'));
    // a line inserted on top: the options stay with "error_rate<1%"
    await fireEvent.input(q('#thresholds'), { target: { value: 'rps>10\np(95)<200ms\nerror_rate<1%' } });
    expect(q('#threshold-2-request').value).toBe('home');
    expect(q('#threshold-2-abort').checked).toBe(true);
    expect(q('#threshold-1-abort').checked).toBe(false);

    await fireEvent.click(q('[data-testid=save-plan]'));
    await waitFor(() => expect(f).toHaveBeenCalled());
    expect(JSON.parse(sentBody(f, 'POST')).thresholds).toEqual(['rps>10', 'p(95)<200ms', { expr: 'error_rate<1%', request: 'home', abort_on_fail: true }]);
  });

  it('shows nested scenario errors next to their inputs', async () => {
    const stored = { id: 6, name: 'login flow', created_at: '', updated_at: '', plan: scenarioPlan };
    mockFetch((_url, init) =>
      init.method === 'PUT'
        ? {
            status: 400,
            body: {
              error: {
                code: 'invalid_plan',
                message: 'the plan has 7 problem(s); see fields',
                fields: {
                  flow: '"x" is not one of weighted, sequence',
                  'data.csv': 'column "a b" is not a variable name (letters, digits, _)',
                  'requests[0].checks[0].value': 'must be a status code number',
                  'requests[0].checks[1].path': 'a JSON path (e.g. data.items.0.id) is required',
                  'requests[0].extract[0].path': 'a JSON path is required',
                  'requests[0].think_time': '"x" is not a think time; write "1s" or "500ms-2s"',
                  'thresholds[1].request': '"login" is not the name of a request of this plan',
                },
              },
            },
          }
        : { status: 200, body: stored },
    );
    const { container } = render(PlanEditor, { id: '6' });
    const q = (sel: string) => container.querySelector(sel) as HTMLElement;
    await waitFor(() => expect((q('#plan-name') as HTMLInputElement)?.value).toBe('login flow'));
    await fireEvent.click(q('[data-testid=save-plan]'));
    await waitFor(() => expect(q('[data-field-error="requests[0].checks[0].value"]')).not.toBeNull());
    const near = (input: string, path: string) => {
      const cell = q(input).closest('td, .field')!;
      expect(cell.querySelector(`[data-field-error="${path}"]`), path).not.toBeNull();
      expect(q(input).getAttribute('aria-invalid'), input).toBe('true');
    };
    near('#flow', 'flow');
    near('#data-csv', 'data.csv');
    near('#req-0-check-0-value', 'requests[0].checks[0].value');
    near('#req-0-check-1-path', 'requests[0].checks[1].path');
    near('#req-0-extract-0-path', 'requests[0].extract[0].path');
    near('#req-0-think-time', 'requests[0].think_time');
    near('#threshold-1-request', 'thresholds[1].request');
    expect(q('[data-testid=form-error-unmatched]')).toBeNull();
  });

  it('reads a local .csv file into the data textarea', async () => {
    mockFetch(() => ({ status: 500, body: {} }));
    const { container } = render(PlanEditor);
    const input = container.querySelector('#data-file') as HTMLInputElement;
    expect((container.querySelector('#data-mode') as HTMLSelectElement).disabled).toBe(true);
    const file = new File(['user,pass\nann,a1\nbob,b2\ncid,c3\n'], 'users.csv', { type: 'text/csv' });
    Object.defineProperty(input, 'files', { value: [file], configurable: true });
    await fireEvent.change(input);
    await waitFor(() => expect((container.querySelector('#data-csv') as HTMLTextAreaElement).value).toBe('user,pass\nann,a1\nbob,b2\ncid,c3\n'));
    await waitFor(() => expect(container.querySelector('[data-testid=data-preview]')!.textContent).toBe('columns: user, pass · 3 rows'));
    expect((container.querySelector('#data-mode') as HTMLSelectElement).disabled).toBe(false);
  });
});
