import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import PlanEditor from './PlanEditor.svelte';

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

function mockFetch(handler: (url: string, init: RequestInit) => unknown) {
  const f = vi.fn(async (url: string, init: RequestInit = {}) => new Response(JSON.stringify(handler(url, init)), { status: init.method === 'POST' ? 201 : 200 }));
  vi.stubGlobal('fetch', f);
  return f;
}

describe('PlanEditor: WebSocket steps', () => {
  it('edits a ws:// request’s session instead of its body and checks, and saves the ws object', async () => {
    const f = mockFetch((_url, init) => ({ id: 4, name: 'x', plan: init.body ? JSON.parse(init.body as string) : {} }));
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel) as HTMLInputElement;
    await fireEvent.input(q('#plan-name'), { target: { value: 'chat' } });
    expect(q('[data-testid=ws-0]')).toBeNull();
    expect(q('[data-testid=send-0]')).not.toBeNull();
    await fireEvent.input(q('#req-0-url'), { target: { value: 'ws://127.0.0.1:8080/echo' } });
    await waitFor(() => expect(q('[data-testid=ws-0]')).not.toBeNull());
    expect(q('#req-0-body')).toBeNull();
    expect(q('[data-testid=add-check-0]')).toBeNull();
    expect(q('[data-testid=send-0]')).toBeNull(); // a test send is for HTTP requests

    await fireEvent.input(q('#req-0-ws-subprotocols'), { target: { value: 'chat, v2' } });
    await fireEvent.click(q('[data-testid=add-ws-message-0]'));
    await fireEvent.input(q('#req-0-ws-0-send'), { target: { value: 'hello {{vu}}' } });
    await fireEvent.input(q('#req-0-ws-0-contains'), { target: { value: 'hello' } });
    await fireEvent.input(q('#req-0-ws-0-timeout'), { target: { value: '2s' } });
    await fireEvent.input(q('#req-0-ws-hold'), { target: { value: '5s' } });

    await fireEvent.click(q('[data-testid=save-plan]'));
    await waitFor(() => expect(f.mock.calls.some((c) => (c[1] as RequestInit | undefined)?.method === 'POST')).toBe(true));
    const post = f.mock.calls.find((c) => (c[1] as RequestInit | undefined)?.method === 'POST')!;
    const sent = JSON.parse((post[1] as RequestInit).body as string);
    expect(sent.requests[0].url).toBe('ws://127.0.0.1:8080/echo');
    expect(sent.requests[0].ws).toEqual({
      subprotocols: ['chat', 'v2'],
      messages: [{ send: 'hello {{vu}}', expect: [{ type: 'body', op: 'contains', value: 'hello' }], timeout: '2s' }],
      hold: '5s',
    });
  });
});
