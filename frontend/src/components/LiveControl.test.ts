import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import LiveControl from './LiveControl.svelte';
import { setLocale } from '../lib/i18n.svelte';
import { addEvents, controlKind, eventLabel } from '../lib/runEvents';
import type { RunEvent } from '../lib/types';

afterEach(() => {
  vi.unstubAllGlobals();
  setLocale('en');
});

function server(status: number, body: unknown) {
  const f = vi.fn(async (_url: string, _init: RequestInit = {}) =>
    new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }),
  );
  vi.stubGlobal('fetch', f);
  return f;
}

const ev: RunEvent = { t: 1764460003512, elapsed_s: 3.512, kind: 'vus', from: 10, to: 50, by: 'ann' };

describe('LiveControl', () => {
  it('starts with the value in force, posts the new VUs and reports the recorded change', async () => {
    const f = server(200, ev);
    const onchange = vi.fn();
    const { getByTestId } = render(LiveControl, { runId: 7, kind: 'vus', current: 10, onchange });
    const input = getByTestId('live-control-value') as HTMLInputElement;
    expect(input.value).toBe('10');
    await fireEvent.input(input, { target: { value: '50' } });
    await fireEvent.click(getByTestId('live-control-apply'));
    await waitFor(() => expect(onchange).toHaveBeenCalledWith(ev));
    const [url, init] = f.mock.calls[0] as [string, RequestInit];
    expect(url).toBe('/api/runs/7/control');
    expect(init.method).toBe('POST');
    expect(JSON.parse(String(init.body))).toEqual({ vus: 50 });
    expect(getByTestId('live-control-done').textContent).toBe('Applied');
  });

  it('sends a rate for an open model, labelled with the time unit', async () => {
    const f = server(200, { ...ev, kind: 'rate', from: 50, to: 12.5 });
    const { getByTestId, getByLabelText } = render(LiveControl, { runId: 3, kind: 'rate', current: 50, timeUnit: '1m' });
    const input = getByLabelText('Rate (per 1m)') as HTMLInputElement;
    await fireEvent.input(input, { target: { value: '12.5' } });
    await fireEvent.click(getByTestId('live-control-apply'));
    await waitFor(() => expect(f).toHaveBeenCalled());
    expect(JSON.parse(String((f.mock.calls[0] as [string, RequestInit])[1].body))).toEqual({ rate: 12.5 });
  });

  it("shows the API's refusal of the value (the field's message)", async () => {
    server(400, { error: { code: 'invalid_value', message: 'vus …', fields: { vus: 'asks for up to 500 VUs; this server allows at most 20 (--max-vus)' } } });
    const onchange = vi.fn();
    const { getByTestId } = render(LiveControl, { runId: 7, kind: 'vus', current: 10, onchange });
    await fireEvent.input(getByTestId('live-control-value'), { target: { value: '500' } });
    await fireEvent.click(getByTestId('live-control-apply'));
    await waitFor(() => expect(getByTestId('live-control-error').textContent).toContain('at most 20 (--max-vus)'));
    expect(getByTestId('live-control-value').getAttribute('aria-invalid')).toBe('true');
    expect(onchange).not.toHaveBeenCalled();
  });

  it('shows a 409 message (the run ended meanwhile)', async () => {
    server(409, { error: { code: 'not_running', message: 'the run is not running' } });
    const { getByTestId } = render(LiveControl, { runId: 7, kind: 'vus', current: 10 });
    await fireEvent.click(getByTestId('live-control-apply'));
    await waitFor(() => expect(getByTestId('live-control-error').textContent).toBe('the run is not running'));
  });

  it('refuses a fractional or negative VU count without asking the server, in the chosen language', async () => {
    const f = server(200, ev);
    setLocale('zh-CN');
    const { getByTestId } = render(LiveControl, { runId: 7, kind: 'vus', current: 10 });
    for (const v of ['2.5', '-1', '']) {
      await fireEvent.input(getByTestId('live-control-value'), { target: { value: v } });
      await fireEvent.click(getByTestId('live-control-apply'));
      await waitFor(() => expect(getByTestId('live-control-error').textContent).toBe('请输入 0 或更大的整数虚拟用户数。'));
    }
    expect(f).not.toHaveBeenCalled();
  });
});

describe('runEvents', () => {
  it('knows which executors take which control', () => {
    expect(controlKind('constant-vus')).toBe('vus');
    expect(controlKind('ramping-vus')).toBe('vus');
    expect(controlKind('constant-arrival-rate')).toBe('rate');
    expect(controlKind('ramping-arrival-rate')).toBe('rate');
    expect(controlKind('per-vu-iterations')).toBeNull();
    expect(controlKind('concurrency-sweep')).toBeNull();
  });

  it('labels an event and merges the same change seen twice (answer and sample) once, in time order', () => {
    expect(eventLabel(ev)).toBe('VUs 10 → 50');
    expect(eventLabel({ ...ev, kind: 'rate', from: 50, to: 12.5 })).toBe('rate 50 → 12.5');
    const later = { ...ev, t: ev.t + 5000, from: 50, to: 5 };
    const merged = addEvents([later], [ev, later, ev]);
    expect(merged).toEqual([ev, later]);
  });
});
