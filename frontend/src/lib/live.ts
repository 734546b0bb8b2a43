// The live stream of one run (`/api/runs/:id/live`). It reconnects with backoff when the socket
// closes before the summary arrived and the run is still running; every (re)open is announced with
// onOpen so the caller can drop its data — the server resends every sample so far.
import type { LiveMessage, Run, Sample, Summary } from './types';

export type LiveState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface LiveHandlers {
  /** A connection opened (the first or a reconnect): previously received samples will be sent again. */
  onOpen(): void;
  onSample(s: Sample): void;
  onSummary(summary: Summary, run?: Run): void;
  /** The server is failing the run, and says why; the summary (status failed) follows. */
  onError?(error: string): void;
  onState?(state: LiveState, detail?: string): void;
  /**
   * Called after the socket closed without a summary: resolve true to reconnect (the run is still
   * running), false to stop. A rejection (server unreachable) is retried with backoff.
   */
  shouldReconnect(): Promise<boolean>;
}

export interface LiveOptions {
  /** Delays in ms for successive reconnect attempts; the last one repeats. */
  backoff?: number[];
  WebSocketImpl?: typeof WebSocket;
}

export const DEFAULT_BACKOFF = [500, 1000, 2000, 4000, 8000, 10000];

export class LiveConnection {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private done = false;
  private closed = false;
  private readonly backoff: number[];
  private readonly WS: typeof WebSocket;

  constructor(
    private readonly url: string,
    private readonly h: LiveHandlers,
    opts: LiveOptions = {},
  ) {
    this.backoff = opts.backoff?.length ? opts.backoff : DEFAULT_BACKOFF;
    this.WS = opts.WebSocketImpl ?? WebSocket;
  }

  start(): void {
    this.connect();
  }

  /** close ends the stream for good (page left). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.onmessage = null;
      this.ws.onerror = null;
      this.ws.onopen = null;
      try {
        this.ws.close();
      } catch {
        /* already closed */
      }
    }
    this.ws = null;
  }

  private connect(): void {
    if (this.closed) return;
    this.h.onState?.(this.attempt === 0 ? 'connecting' : 'reconnecting');
    let ws: WebSocket;
    try {
      ws = new this.WS(this.url);
    } catch (err) {
      this.retry(String(err));
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.h.onOpen();
      this.h.onState?.('open');
    };
    ws.onmessage = (ev: MessageEvent) => {
      this.attempt = 0;
      let msg: LiveMessage;
      try {
        msg = JSON.parse(typeof ev.data === 'string' ? ev.data : '') as LiveMessage;
      } catch {
        return;
      }
      if (msg?.type === 'sample' && msg.data) this.h.onSample(msg.data);
      else if (msg?.type === 'error' && msg.data) this.h.onError?.(String(msg.data.error ?? ''));
      else if (msg?.type === 'summary' && msg.data) {
        this.done = true;
        this.h.onSummary(msg.data, msg.run);
      }
    };
    ws.onclose = (ev: CloseEvent) => {
      this.ws = null;
      if (this.closed) return;
      if (this.done) {
        this.h.onState?.('closed');
        return;
      }
      this.afterUnexpectedClose(ev.reason || `code ${ev.code}`);
    };
  }

  private afterUnexpectedClose(detail: string): void {
    this.h.shouldReconnect().then(
      (again) => {
        if (this.closed) return;
        if (again) this.retry(detail);
        else this.h.onState?.('closed', detail);
      },
      () => this.retry(detail),
    );
  }

  private retry(detail: string): void {
    if (this.closed) return;
    const delay = this.backoff[Math.min(this.attempt, this.backoff.length - 1)];
    this.attempt++;
    this.h.onState?.('reconnecting', detail);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }
}
