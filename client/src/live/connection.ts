// A WebSocket to /ws (decisions.md section 5) for browsers and Node: hello with the token, client
// id and the last event seq seen (the server replays what we missed, or says ResyncRequired),
// each event handled once, reconnect with jittered backoff up to 30 s, at once when the server
// advises it (1012), and no retry after a close that a reconnect cannot fix (4400, 4401, 4409).
import { backoffDelay } from './backoff.js';
import type { ClientCommand, ResyncRequired, ServerMessage } from './messages.js';

/**
 * The part of the WebSocket API we use: the browser's global and the `ws` package both have it.
 * Handler events are `any` because each declares its own event classes; we read only
 * `data` (message) and `code`/`reason` (close).
 */
export interface WebSocketLike {
  readonly readyState: number;
  binaryType: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
}
// `protocols` keeps the signature compatible with both constructors (ws declares several overloads).
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

export type ConnectionStatus =
  | { state: 'connecting'; attempt: number }
  | { state: 'ready'; connectionId: string }
  | { state: 'waiting'; attempt: number; retryAt: number; lastClose: string }
  | { state: 'closed'; reason: string; code?: number };

export interface ConnectionListener {
  onMessage?(message: ServerMessage): void;
  onStatus?(status: ConnectionStatus): void;
  /** Every time the hello is answered; `reconnected` from the second time on. */
  onReady?(reconnected: boolean): void;
  /** Replay could not cover the gap since last_seq: refetch what is shown over REST. */
  onResync?(message: ResyncRequired): void;
}

export interface LiveConnectionOptions extends ConnectionListener {
  url: string;
  /** Asked at every (re)connect, so a refreshed token is used. */
  token: string | (() => string | Promise<string>);
  clientId: string;
  /** The browser's WebSocket by default; in Node pass `ws`'s (`import WebSocket from 'ws'`). */
  WebSocket?: WebSocketConstructor;
  /** Start replay after this seq (e.g. persisted by a page that reloads). */
  lastSeq?: number;
  traceparent?: string;
  /** Close a socket whose hello got no `ready` in this time (the server allows 10 s for the hello). */
  readyTimeoutMs?: number;
  /** Delay before reconnect attempt n; defaults to exponential with jitter, capped at 30 s. */
  backoff?: (attempt: number) => number;
}

const OPEN = 1;
const ADVISED_RECONNECT_MS = 100;
const SEEN_EVENTS = 5_000;
/** Closes a reconnect cannot fix: the credentials or the client itself are wrong. */
const FINAL_CLOSES: Record<number, string> = {
  4400: 'the server refused the hello (4400)',
  4401: 'the server refused the token (4401): sign in again',
  4409: 'the token belongs to another account (4409)',
};

export class LiveConnection {
  status: ConnectionStatus = { state: 'connecting', attempt: 0 };
  /** Highest event seq received: sent as last_seq on reconnect. */
  lastSeq: number | null;
  private ws: WebSocketLike | null = null;
  private attempt = 0;
  private everReady = false;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly listeners = new Set<ConnectionListener>();
  /** Replayed events may overlap what arrived live: each is handled once. */
  private readonly seen = new Set<string>();
  private readonly Ctor: WebSocketConstructor;

  constructor(private readonly opts: LiveConnectionOptions) {
    const Ctor = opts.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) throw new Error('no WebSocket: pass one (in Node: `import WebSocket from "ws"`)');
    this.Ctor = Ctor;
    this.lastSeq = opts.lastSeq ?? null;
    this.listeners.add(opts);
  }

  get ready(): boolean {
    return this.status.state === 'ready' && this.ws?.readyState === OPEN;
  }

  /** Resolves once the hello is answered (at once when it is); rejects when the connection closes for good, or after `timeoutMs`. */
  whenReady(timeoutMs = 15_000): Promise<void> {
    if (this.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        off();
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(
        () => done(new Error(`not connected within ${timeoutMs} ms (${this.status.state}); was connect() called?`)),
        timeoutMs,
      );
      const off = this.subscribe({
        onReady: () => done(),
        onStatus: (st) => st.state === 'closed' && done(new Error(`the connection is closed: ${st.reason}`)),
      });
    });
  }

  /** Adds a listener; returns its removal. */
  subscribe(listener: ConnectionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  connect(): void {
    if (this.stopped) return;
    this.setStatus({ state: 'connecting', attempt: this.attempt });
    const ws = new this.Ctor(this.opts.url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    const readyTimer = setTimeout(() => ws.close(4000, 'no ready in time'), this.opts.readyTimeoutMs ?? 15_000);
    ws.onopen = async () => {
      const token = typeof this.opts.token === 'function' ? await this.opts.token() : this.opts.token;
      const hello: ClientCommand = { type: 'hello', token, client_id: this.opts.clientId };
      if (this.lastSeq !== null) hello.last_seq = this.lastSeq;
      if (this.opts.traceparent) hello.traceparent = this.opts.traceparent;
      if (this.ws === ws && ws.readyState === OPEN) ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (e: { data: unknown }) => {
      if (this.ws !== ws || typeof e.data !== 'string') return;
      let msg: ServerMessage;
      try {
        msg = JSON.parse(e.data) as ServerMessage;
      } catch {
        return;
      }
      if (msg.type === 'ready') {
        clearTimeout(readyTimer);
        this.attempt = 0;
        this.setStatus({ state: 'ready', connectionId: msg.connection_id });
        const reconnected = this.everReady;
        this.everReady = true;
        this.emit((l) => l.onReady?.(reconnected));
        return;
      }
      if (msg.type === 'ResyncRequired') {
        this.emit((l) => l.onResync?.(msg));
        return;
      }
      if (!this.firstSight(msg)) return;
      this.emit((l) => l.onMessage?.(msg));
    };
    ws.onerror = () => undefined; // a close follows; reconnecting is decided there
    ws.onclose = (e: { code: number; reason: string }) => {
      clearTimeout(readyTimer);
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return this.setStatus({ state: 'closed', reason: 'closed by the client' });
      if (FINAL_CLOSES[e.code])
        return this.setStatus({
          state: 'closed',
          code: e.code,
          reason: `${FINAL_CLOSES[e.code]}${e.reason ? `: ${e.reason}` : ''}`,
        });
      const delay = e.code === 1012 ? ADVISED_RECONNECT_MS : (this.opts.backoff ?? backoffDelay)(this.attempt);
      this.attempt++;
      this.setStatus({
        state: 'waiting',
        attempt: this.attempt,
        retryAt: Date.now() + delay,
        lastClose: `${e.code}${e.reason ? ` ${e.reason}` : ''}`,
      });
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  /** Sends a command; false when not connected (nothing is queued: the caller decides). */
  send(message: Exclude<ClientCommand, { type: 'hello' }>): boolean {
    if (!this.ready) return false;
    this.ws!.send(JSON.stringify(message));
    return true;
  }

  sendBinary(data: Uint8Array): boolean {
    if (!this.ready) return false;
    this.ws!.send(data);
    return true;
  }

  /** Loses the connection as a network failure would: the client reconnects (and resumes). */
  drop(): void {
    this.ws?.close(4000, 'dropped by the client');
  }

  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close(1000, 'closed by the client');
    this.setStatus({ state: 'closed', reason: 'closed by the client' });
  }

  private firstSight(msg: ServerMessage): boolean {
    const { seq, event_id } = msg as { seq?: unknown; event_id?: unknown };
    if (typeof seq === 'number') this.lastSeq = Math.max(this.lastSeq ?? 0, seq);
    if (typeof event_id !== 'string') return true;
    if (this.seen.has(event_id)) return false;
    this.seen.add(event_id);
    if (this.seen.size > SEEN_EVENTS) this.seen.delete(this.seen.values().next().value!);
    return true;
  }

  private setStatus(status: ConnectionStatus) {
    this.status = status;
    this.emit((l) => l.onStatus?.(status));
  }

  private emit(call: (l: ConnectionListener) => void) {
    for (const l of [...this.listeners]) call(l);
  }
}
