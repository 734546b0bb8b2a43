// WebSocket steps in the UI (docs/api.md, "WebSocket steps"): which plans have them, the editor's
// form of a request's `ws` object, and the run view's WebSocket charts.
import type { SeriesDef, ColumnKey } from './series';

/** isWebSocketURL tells whether a request URL makes the request a WebSocket step. */
export function isWebSocketURL(url: unknown): boolean {
  return typeof url === 'string' && /^wss?:\/\//i.test(url.trim());
}

/** hasWebSocketSteps tells whether a plan (as stored with a run) has a WebSocket step. */
export function hasWebSocketSteps(plan: unknown): boolean {
  const reqs = (plan as { requests?: unknown } | null | undefined)?.requests;
  return Array.isArray(reqs) && reqs.some((r) => isWebSocketURL((r as { url?: unknown } | null)?.url));
}

/** One message of the editor: send text, a "body contains" expectation, timeout; other checks kept as they were. */
export interface WSMessageRow {
  send: string;
  contains: string;
  timeout: string;
  otherChecks: unknown[];
  extra: Record<string, unknown>;
}

/** The editor's form of a request's ws object; extra keeps the fields it does not edit (max_message…). */
export interface WSForm {
  subprotocols: string;
  messages: WSMessageRow[];
  hold: string;
  close: boolean;
  extra: Record<string, unknown>;
}

function obj(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

function rest(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
}

function isContains(c: unknown): boolean {
  const o = obj(c);
  return o.type === 'body' && o.op === 'contains' && typeof o.value === 'string' && Object.keys(o).length === 3;
}

export function emptyWSMessage(): WSMessageRow {
  return { send: '', contains: '', timeout: '', otherChecks: [], extra: {} };
}

/** wsToForm reads a request's ws object (anything else gives an empty form). */
export function wsToForm(ws: unknown): WSForm {
  const w = obj(ws);
  const msgs = Array.isArray(w.messages) ? w.messages : [];
  return {
    subprotocols: Array.isArray(w.subprotocols) ? w.subprotocols.map(str).join(', ') : '',
    messages: msgs.map((m) => {
      const o = obj(m);
      const expect = Array.isArray(o.expect) ? o.expect : [];
      const first = expect.findIndex(isContains);
      return {
        send: str(o.send),
        contains: first >= 0 ? str(obj(expect[first]).value) : '',
        timeout: str(o.timeout),
        otherChecks: expect.filter((_, i) => i !== first),
        extra: rest(o, ['send', 'expect', 'timeout']),
      };
    }),
    hold: str(w.hold),
    close: w.close !== false,
    extra: rest(w, ['subprotocols', 'messages', 'hold', 'close']),
  };
}

/** formToWS writes the ws object back: empty fields are left out (the server's defaults). */
export function formToWS(f: WSForm): Record<string, unknown> {
  const out: Record<string, unknown> = { ...f.extra };
  const protos = f.subprotocols.split(',').map((s) => s.trim()).filter(Boolean);
  if (protos.length > 0) out.subprotocols = protos;
  if (f.messages.length > 0) {
    out.messages = f.messages.map((m) => {
      const o: Record<string, unknown> = { ...m.extra };
      if (m.send) o.send = m.send;
      const expect = m.contains ? [{ type: 'body', op: 'contains', value: m.contains }, ...m.otherChecks] : m.otherChecks;
      if (expect.length > 0) o.expect = expect;
      if (m.timeout.trim()) o.timeout = m.timeout.trim();
      return o;
    });
  }
  if (f.hold.trim()) out.hold = f.hold.trim();
  if (!f.close) out.close = false;
  return out;
}

/** A chart of the run view (RunView's ChartDef). */
export interface WSChart {
  testid: string;
  title: string;
  unit: string;
  series: SeriesDef[];
}

/** wsCharts are the run view's WebSocket charts: messages per second, and round trip p50/p95. */
export function wsCharts(t: (k: 'ws.chart.messages' | 'ws.chart.messagesUnit' | 'ws.chart.sentLegend' | 'ws.chart.receivedLegend' | 'ws.chart.roundTrip') => string): WSChart[] {
  const col = (key: ColumnKey, label: string, color: string): SeriesDef => ({ key, label, color });
  return [
    {
      testid: 'chart-ws-messages',
      title: t('ws.chart.messages'),
      unit: t('ws.chart.messagesUnit'),
      series: [col('ws_sent', t('ws.chart.sentLegend'), '#2563eb'), col('ws_received', t('ws.chart.receivedLegend'), '#16a34a')],
    },
    {
      testid: 'chart-ws-rtt',
      title: t('ws.chart.roundTrip'),
      unit: 'ms',
      series: [col('ws_rtt_p50', 'p50', '#16a34a'), col('ws_rtt_p95', 'p95', '#f59e0b')],
    },
  ];
}
