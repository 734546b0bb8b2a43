import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import SendRequest from './SendRequest.svelte';
import { setLocale } from '../lib/i18n.svelte';
import type { PlanInput, SendResult } from '../lib/types';

afterEach(() => {
  vi.unstubAllGlobals();
  setLocale('en');
});

const plan: PlanInput = { name: 'p', requests: [{ url: 'http://127.0.0.1:8090/a' }, { url: 'http://127.0.0.1:8090/b', headers: { Authorization: '********' } }] };

const ok: SendResult = {
  request: 'GET http://127.0.0.1:8090/b',
  kind: '',
  status: 200,
  redirected: false,
  headers: [
    ['Content-Type', 'text/plain'],
    ['X-Seen', '/b'],
  ],
  headers_truncated: false,
  body: 'hello world',
  body_encoding: 'text',
  body_bytes: 6000,
  body_truncated: true,
  timing: { connect_ms: 0.5, tls_ms: 0, wait_ms: 12.25, receive_ms: 0.3, total_ms: 13.1 },
  checks: [
    { desc: 'status eq 200', pass: true },
    { desc: 'body contains nope', pass: false },
  ],
};

function server(status: number, body: unknown) {
  const f = vi.fn(async (_url: string, _init: RequestInit = {}) =>
    new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }),
  );
  vi.stubGlobal('fetch', f);
  return f;
}

describe('SendRequest', () => {
  it('sends the edited plan with its request index and stored plan id, and shows the answer', async () => {
    const f = server(200, ok);
    const { container, getByTestId } = render(SendRequest, { plan, index: 1, planId: 4 });
    await fireEvent.click(getByTestId('send-1'));
    await waitFor(() => expect(container.querySelector('[data-testid=send-result-1]')).not.toBeNull());
    const [url, init] = f.mock.calls[0] as [string, RequestInit];
    expect(url).toBe('/api/plans/send');
    expect(init.method).toBe('POST');
    expect(JSON.parse(String(init.body))).toEqual({ plan, request: 1, plan_id: 4 });
    const text = container.textContent!;
    expect(container.querySelector('.status')!.textContent).toBe('200');
    expect(text).toContain('OK');
    expect(text).toContain('Waiting (TTFB) 12.3 ms');
    expect(text).toContain('Connect 0.5 ms');
    expect(text).toContain('Headers (2)');
    expect(container.querySelector('tbody')!.textContent).toContain('X-Seen/b');
    expect(container.querySelector('pre.body')!.textContent).toBe('hello world');
    expect(text).toContain('first 4 KiB shown');
    const checks = container.querySelectorAll('.checks li');
    expect(checks).toHaveLength(2);
    expect(checks[0].classList.contains('ok')).toBe(true);
    expect(checks[1].classList.contains('bad')).toBe(true);
  });

  it('shows a transport error kind with its message and no body, in Chinese too', async () => {
    setLocale('zh-CN');
    const f = server(200, {
      ...ok,
      kind: 'connect_refused',
      message: 'dial: connection refused',
      status: 0,
      headers: [],
      body: '',
      body_bytes: 0,
      body_truncated: false,
      checks: [],
    });
    const { container, getByTestId } = render(SendRequest, { plan, index: 0 });
    expect(getByTestId('send-0').textContent!.trim()).toBe('发送');
    await fireEvent.click(getByTestId('send-0'));
    await waitFor(() => expect(container.querySelector('[data-testid=send-result-0]')).not.toBeNull());
    expect(JSON.parse(String((f.mock.calls[0] as [string, RequestInit])[1].body))).toEqual({ plan, request: 0 });
    expect(container.querySelector('.kind')!.textContent).toBe('connect_refused');
    expect(container.textContent).toContain('dial: connection refused');
    expect(container.querySelector('.status')).toBeNull();
    expect(container.querySelector('pre.body')).toBeNull();
    expect(container.textContent).toContain('连接');
  });

  it('shows an API error (invalid plan, too many sends) instead of a result', async () => {
    server(429, { error: { code: 'too_many_sends', message: '2 test requests are being sent; try again when one ends' } });
    const { container, getByTestId } = render(SendRequest, { plan, index: 0 });
    await fireEvent.click(getByTestId('send-0'));
    await waitFor(() => expect(container.querySelector('[role=alert]')).not.toBeNull());
    expect(container.querySelector('[role=alert]')!.textContent).toContain('try again');
    expect(container.querySelector('[data-testid=send-result-0]')).toBeNull();
  });

  it('a header over 4 KiB still shows the status, the fields that fit and that they were cut', async () => {
    server(200, {
      ...ok,
      kind: 'header_too_large',
      message: 'the response header is larger than 4096 bytes, the most a run reads (a run counts it as header_too_large): the status and the first 19 header fields are shown',
      status: 202,
      headers: [['X-Pad-00', 'v']],
      headers_truncated: true,
      body: '',
      body_bytes: 0,
      body_truncated: false,
      checks: [],
    });
    const { container, getByTestId } = render(SendRequest, { plan, index: 0 });
    await fireEvent.click(getByTestId('send-0'));
    await waitFor(() => expect(container.querySelector('[data-testid=send-result-0]')).not.toBeNull());
    const res = container.querySelector('[data-testid=send-result-0]')!;
    expect(res.querySelector('.status')!.textContent).toBe('202');
    expect(res.textContent).toContain('header_too_large');
    expect(res.textContent).toContain('larger than 4096 bytes');
    const cut = container.querySelector('[data-testid=send-headers-cut-0]')!;
    expect(cut.closest('details')).toBeNull(); // seen without opening the headers
    expect(cut.textContent).toContain('cut');
  });
});
