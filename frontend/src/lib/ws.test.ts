import { describe, expect, it } from 'vitest';
import { formToWS, hasWebSocketSteps, isWebSocketURL, wsToForm } from './ws';
import { SeriesStore } from './series';

describe('WebSocket steps', () => {
  it('knows a WebSocket step by its URL', () => {
    expect(isWebSocketURL('ws://h/')).toBe(true);
    expect(isWebSocketURL(' WSS://h/x')).toBe(true);
    expect(isWebSocketURL('http://h/')).toBe(false);
    expect(isWebSocketURL(undefined)).toBe(false);
    expect(hasWebSocketSteps({ requests: [{ url: 'http://a/' }, { url: 'wss://b/' }] })).toBe(true);
    expect(hasWebSocketSteps({ requests: [{ url: 'http://a/' }] })).toBe(false);
    expect(hasWebSocketSteps(null)).toBe(false);
  });

  it('round-trips a ws object through the editor form, keeping what it does not edit', () => {
    const ws = {
      subprotocols: ['chat', 'v2'],
      messages: [
        { send: 'hi {{vu}}', expect: [{ type: 'body', op: 'contains', value: 'hi' }, { type: 'json', path: 'ok', op: 'eq', value: true }], timeout: '2s' },
        { expect: [{ type: 'latency', op: 'lt', value: '1s' }] },
      ],
      hold: '5s',
      close: false,
      max_message: 2048,
    };
    const f = wsToForm(ws);
    expect(f.subprotocols).toBe('chat, v2');
    expect(f.messages[0].contains).toBe('hi');
    expect(f.messages[0].otherChecks).toHaveLength(1);
    expect(f.messages[1].contains).toBe('');
    expect(f.close).toBe(false);
    expect(formToWS(f)).toEqual(ws);
  });

  it('leaves empty fields out for the server’s defaults', () => {
    const f = wsToForm(undefined);
    expect(formToWS(f)).toEqual({});
    f.messages.push({ send: 'x', contains: '', timeout: ' ', otherChecks: [], extra: {} });
    expect(formToWS(f)).toEqual({ messages: [{ send: 'x' }] });
  });

  it('keeps the seconds’ message rates and round trips as chart columns (gaps without one)', () => {
    const s = new SeriesStore();
    const lat = { min: 1, mean: 1, p50: 1, p75: 1, p90: 1, p95: 2, p99: 2, p99_9: 2, max: 3 };
    const zero = { min: 0, mean: 0, p50: 0, p75: 0, p90: 0, p95: 0, p99: 0, p99_9: 0, max: 0 };
    const block = (rate: number, rtt: typeof lat) => ({ sessions: 1, sessions_failed: 0, messages_sent: rate, messages_received: rate, messages_sent_rate: rate, messages_received_rate: rate, connect_ms: lat, round_trip_ms: rtt });
    s.push({ elapsed_s: 1, ws: block(5, lat) } as never);
    s.push({ elapsed_s: 2, ws: block(0, zero) } as never);
    s.push({ elapsed_s: 3 } as never);
    expect(s.cols.ws_sent).toEqual([5, 0, null]);
    expect(s.cols.ws_rtt_p50).toEqual([1, null, null]);
    expect(s.cols.ws_rtt_p95).toEqual([2, null, null]);
  });
});
