// The console's WebSocket to /ws (decisions.md section 5): hello with the token, client id and
// the last event seq seen (so the server replays what a reconnecting tab missed), reconnect
// with exponential backoff up to 30 s, an immediate reconnect when the server advises one
// (close 1012), and no retry after 4401 (bad credentials).
import { backoffDelay } from './backoff';
import type { ServerMessage } from './types';

export type SocketStatus =
  | { state: 'connecting'; attempt: number }
  | { state: 'ready'; connectionId: string }
  | { state: 'waiting'; attempt: number; retryAt: number; lastClose: string }
  | { state: 'closed'; reason: string };

export interface LiveSocketOptions {
  url: string;
  token: string;
  clientId: string;
  onMessage(message: ServerMessage): void;
  onStatus(status: SocketStatus): void;
  /** Every time the hello is answered; `reconnected` from the second time on. */
  onReady(reconnected: boolean): void;
}

const HELLO_TIMEOUT_MS = 10_000;
const ADVISED_RECONNECT_MS = 100;
const SEEN_EVENTS = 5_000;

export class LiveSocket {
  status: SocketStatus = { state: 'connecting', attempt: 0 };
  /** Highest event seq received: sent as last_seq on reconnect. */
  lastSeq: number | null = null;
  private ws: WebSocket | null = null;
  private attempt = 0;
  private everReady = false;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Replayed events may overlap what arrived live: each is handled once. */
  private readonly seen = new Set<string>();

  constructor(private readonly opts: LiveSocketOptions) {}

  get ready(): boolean {
    return this.status.state === 'ready' && this.ws?.readyState === WebSocket.OPEN;
  }

  connect(): void {
    if (this.stopped) return;
    this.setStatus({ state: 'connecting', attempt: this.attempt });
    const ws = new WebSocket(this.opts.url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    const helloTimer = setTimeout(() => ws.close(4000, 'no ready in time'), HELLO_TIMEOUT_MS);
    ws.onopen = () => {
      const hello: Record<string, unknown> = { type: 'hello', token: this.opts.token, client_id: this.opts.clientId };
      if (this.lastSeq !== null) hello.last_seq = this.lastSeq;
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (e) => {
      if (this.ws !== ws || typeof e.data !== 'string') return;
      let msg: ServerMessage;
      try {
        msg = JSON.parse(e.data) as ServerMessage;
      } catch {
        return;
      }
      if (msg.type === 'ready') {
        clearTimeout(helloTimer);
        this.attempt = 0;
        this.setStatus({ state: 'ready', connectionId: String(msg.connection_id ?? '') });
        const reconnected = this.everReady;
        this.everReady = true;
        this.opts.onReady(reconnected);
        return;
      }
      if (!this.firstSight(msg)) return;
      this.opts.onMessage(msg);
    };
    ws.onclose = (e) => {
      clearTimeout(helloTimer);
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return this.setStatus({ state: 'closed', reason: 'signed out' });
      if (e.code === 4401) return this.setStatus({ state: 'closed', reason: 'the server refused the token (4401): sign in again' });
      if (e.code === 4400) return this.setStatus({ state: 'closed', reason: `the server refused the hello (4400 ${e.reason})` });
      const delay = e.code === 1012 ? ADVISED_RECONNECT_MS : backoffDelay(this.attempt);
      this.attempt++;
      this.setStatus({ state: 'waiting', attempt: this.attempt, retryAt: Date.now() + delay, lastClose: `${e.code}${e.reason ? ` ${e.reason}` : ''}` });
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  sendJson(message: Record<string, unknown>): boolean {
    if (!this.ready) return false;
    this.ws!.send(JSON.stringify(message));
    return true;
  }

  sendBinary(data: Uint8Array): boolean {
    if (!this.ready) return false;
    this.ws!.send(data);
    return true;
  }

  /** Debug: lose the connection as a network failure would (the client reconnects and resumes). */
  drop(): void {
    this.ws?.close(4000, 'dropped from the console');
  }

  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close(1000, 'signed out');
    this.setStatus({ state: 'closed', reason: 'signed out' });
  }

  private firstSight(msg: ServerMessage): boolean {
    if (typeof msg.seq === 'number') this.lastSeq = Math.max(this.lastSeq ?? 0, msg.seq);
    if (typeof msg.event_id !== 'string') return true;
    if (this.seen.has(msg.event_id)) return false;
    this.seen.add(msg.event_id);
    if (this.seen.size > SEEN_EVENTS) this.seen.delete(this.seen.values().next().value!);
    return true;
  }

  private setStatus(status: SocketStatus) {
    this.status = status;
    this.opts.onStatus(status);
  }
}
