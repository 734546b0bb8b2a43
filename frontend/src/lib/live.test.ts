import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveConnection } from './live';
import type { Sample } from './types';

class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: string }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(public url: string) {
    FakeSocket.all.push(this);
  }
  open() {
    this.onopen?.();
  }
  send(msg: unknown) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  drop(code = 1006) {
    this.onclose?.({ code, reason: '' });
  }
  close() {
    this.closed = true;
  }
}

const sample = (n: number) => ({ elapsed_s: n, requests: 1, rps: 1, errors: 0, active_vus: 1, t: n }) as Sample;

function setup(running: () => Promise<boolean>) {
  const events: string[] = [];
  const conn = new LiveConnection(
    'ws://x/api/runs/1/live',
    {
      onOpen: () => events.push('open'),
      onSample: (s) => events.push(`sample ${s.elapsed_s}`),
      onSummary: (s) => events.push(`summary ${s.requests}`),
      shouldReconnect: running,
    },
    { backoff: [100, 200], WebSocketImpl: FakeSocket as unknown as typeof WebSocket },
  );
  return { conn, events };
}

beforeEach(() => {
  FakeSocket.all = [];
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('LiveConnection', () => {
  it('delivers samples then the summary, and does not reconnect after it', async () => {
    const running = vi.fn(async () => true);
    const { conn, events } = setup(running);
    conn.start();
    const ws = FakeSocket.all[0];
    ws.open();
    ws.send({ type: 'sample', data: sample(1) });
    ws.send({ type: 'bogus' });
    ws.send({ type: 'summary', data: { requests: 5 } });
    ws.drop(1000);
    await vi.runAllTimersAsync();
    expect(events).toEqual(['open', 'sample 1', 'summary 5']);
    expect(running).not.toHaveBeenCalled();
    expect(FakeSocket.all).toHaveLength(1);
  });

  it('passes the error message on and still waits for the summary', async () => {
    const running = vi.fn(async () => true);
    const events: string[] = [];
    const conn = new LiveConnection(
      'ws://x/api/runs/1/live',
      {
        onOpen: () => events.push('open'),
        onSample: (s) => events.push(`sample ${s.elapsed_s}`),
        onSummary: (s, r) => events.push(`summary ${s.requests} ${r?.status}`),
        onError: (e) => events.push(`error ${e}`),
        shouldReconnect: running,
      },
      { backoff: [100, 200], WebSocketImpl: FakeSocket as unknown as typeof WebSocket },
    );
    conn.start();
    const ws = FakeSocket.all[0];
    ws.open();
    ws.send({ type: 'sample', data: sample(1) });
    ws.send({ type: 'error', data: { error: 'storage failed: the disk is full' } });
    ws.send({ type: 'summary', data: { requests: 5 }, run: { status: 'failed' } });
    ws.drop(1000);
    await vi.runAllTimersAsync();
    expect(events).toEqual(['open', 'sample 1', 'error storage failed: the disk is full', 'summary 5 failed']);
    expect(running).not.toHaveBeenCalled();
  });

  it('reconnects with backoff while the run is still running, announcing each open', async () => {
    const { conn, events } = setup(async () => true);
    conn.start();
    FakeSocket.all[0].open();
    FakeSocket.all[0].send({ type: 'sample', data: sample(1) });
    FakeSocket.all[0].drop();
    await vi.advanceTimersByTimeAsync(50);
    expect(FakeSocket.all).toHaveLength(1); // waits the first backoff step
    await vi.advanceTimersByTimeAsync(60);
    expect(FakeSocket.all).toHaveLength(2);
    FakeSocket.all[1].open();
    FakeSocket.all[1].send({ type: 'sample', data: sample(1) });
    expect(events).toEqual(['open', 'sample 1', 'open', 'sample 1']);
    conn.close();
  });

  it('stops when the run has ended meanwhile', async () => {
    const { conn } = setup(async () => false);
    conn.start();
    FakeSocket.all[0].open();
    FakeSocket.all[0].drop();
    await vi.runAllTimersAsync();
    expect(FakeSocket.all).toHaveLength(1);
    conn.close();
  });

  it('retries when the status check itself fails, and stops for good on close()', async () => {
    let calls = 0;
    const { conn } = setup(async () => {
      calls++;
      throw new Error('server down');
    });
    conn.start();
    FakeSocket.all[0].drop();
    await vi.advanceTimersByTimeAsync(100);
    expect(FakeSocket.all).toHaveLength(2);
    FakeSocket.all[1].drop();
    await vi.advanceTimersByTimeAsync(150);
    expect(FakeSocket.all).toHaveLength(2); // second step is 200 ms
    await vi.advanceTimersByTimeAsync(60);
    expect(FakeSocket.all).toHaveLength(3);
    conn.close();
    expect(FakeSocket.all[2].closed).toBe(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(FakeSocket.all).toHaveLength(3);
    expect(calls).toBe(2);
  });
});
