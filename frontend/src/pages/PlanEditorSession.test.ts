import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import PlanEditor from './PlanEditor.svelte';

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

// The HTTP panel's cookie jar select and compression checkboxes, and the cookie extraction source,
// as the plan the editor saves.
describe('PlanEditor: sessions and compression', () => {
  it('saves http.cookies, http.compression in ticked order and a cookie extraction', async () => {
    const f = vi.fn(async (_url: string, init: RequestInit = {}) =>
      new Response(JSON.stringify({ id: 4, name: 'x', plan: JSON.parse(init.body as string) }), { status: 201, headers: { 'Content-Type': 'application/json' } }),
    );
    vi.stubGlobal('fetch', f);
    const { container } = render(PlanEditor);
    const q = (sel: string) => container.querySelector(sel);
    await fireEvent.input(q('#plan-name')!, { target: { value: 'session' } });
    await fireEvent.input(q('#req-0-url')!, { target: { value: 'http://127.0.0.1:1/login' } });
    const modes = [...(q('#http-cookies') as HTMLSelectElement).options].map((o) => [o.value, o.textContent]);
    expect(modes).toEqual([['vu', 'One jar per VU'], ['iteration', 'Cleared each iteration'], ['off', 'Off']]);
    await fireEvent.change(q('#http-cookies')!, { target: { value: 'iteration' } });
    await fireEvent.click(q('#http-compression-zstd')!);
    await fireEvent.click(q('#http-compression-gzip')!);
    expect((q('#http-compression-br') as HTMLInputElement).checked).toBe(false);

    await fireEvent.click(q('#add-extract-0')!);
    await fireEvent.input(q('#req-0-extract-0-var')!, { target: { value: 'sid' } });
    await fireEvent.change(q('#req-0-extract-0-from')!, { target: { value: 'cookie' } });
    const arg = q('#req-0-extract-0-name') as HTMLInputElement;
    expect(arg.title).toBe('cookie name');
    await fireEvent.input(arg, { target: { value: 'SESSION' } });

    await fireEvent.click(q('[data-testid=save-plan]')!);
    await waitFor(() => expect(f).toHaveBeenCalled());
    const sent = JSON.parse((f.mock.calls[0][1] as RequestInit).body as string);
    expect(sent.http).toEqual({ timeout: '10s', keep_alive: true, cookies: 'iteration', compression: ['zstd', 'gzip'] });
    expect(sent.requests[0].extract).toEqual([{ var: 'sid', from: 'cookie', name: 'SESSION' }]);
  });
});
