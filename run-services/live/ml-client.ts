// One take's audio stream to the ML service (its stand-in: emulators/ml/server.ts): POST /streaming, frames over
// its WebSocket, DELETE /streaming/{id} to drain. Storage never waits on it: a frame the ML
// socket cannot take right now (not open, or more than MAX_BUFFERED_BYTES unsent) is dropped for
// ML and counted; a lost session is re-created with backoff from the next sequence.
//
// Frames are forwarded every LIVE_ML_FORWARD_MS (forwardEveryMs), each take's together in one
// socket write (the socket corked around them): one write per take per interval instead of one
// per frame, each frame still its own WebSocket message.
import net from 'node:net';
import tls from 'node:tls';
import WebSocket from 'ws';
import type { z } from 'zod';
import { backoffMs, sleep } from '@mi/lib/async';
import type { MlAuthorization } from '@mi/lib/adapters/ml-credential';
import type { Logger } from '@mi/lib/telemetry/log';
import { instruments } from '@mi/lib/telemetry/metrics';
import {
  DrainReport,
  ML_MESSAGE_MAX_BYTES,
  parseMlMessage,
  StreamingSession,
  type CoreRejection,
  type StreamingStart,
} from '@mi/lib/ml/contract';

export type MlSessionInit = StreamingStart;

/** A health observation for the recording's history and its client (RecordingHealth). */
export interface MlHealth {
  source: 'ml' | 'core';
  code: string;
  detail: Record<string, unknown>;
}

export interface DrainResult {
  drained: boolean;
  processed?: number;
  dropped?: number;
  /** The drain did not answer within the bound. */
  timed_out?: boolean;
  error?: string;
}

export interface MlStreamOptions {
  baseUrl: string;
  /** The Authorization header value of each call (lib/adapters/ml-credential.ts). */
  authorization: MlAuthorization;
  /** How long POST /streaming may take (RECORDING_ML_START_TIMEOUT_SECONDS): then it counts as unavailable and is retried. */
  startTimeoutMs: number;
  init: MlSessionInit;
  log: Logger;
  /** traceparent/tracestate sent with every request of the session (POST, upgrade, DELETE). */
  trace: Record<string, string>;
  /** How long a frame may wait to go out with the next ones of its take (LIVE_ML_FORWARD_MS; 0: at once). */
  forwardEveryMs: number;
  onHealth(h: MlHealth): void;
}

const MAX_BUFFERED_BYTES = 256 * 1024;
/** Frames kept while the session is being (re)created: ~10 s of audio. */
const MAX_QUEUED_FRAMES = 100;
const BACKOFF_MS = [250, 500, 1_000, 2_000, 5_000, 10_000];
/** Drop counts are reported at most this often (the ML's own and ours). */
const DROP_REPORT_MS = 2_000;

/**
 * Frames go out with a mask of zeros, which ws sends without masking (or copying) the bytes. A
 * client's random mask (RFC 6455, 10.3) keeps a browser script's chosen bytes from reading as
 * HTTP to a proxy that inspects the connection; this one is TLS to the ML service in production
 * (wss://, nothing in between reads it) and a local socket elsewhere. Saves a copy of every frame.
 */
const zeroMask = (mask: Buffer) => void mask.fill(0);

/** The streams holding frames to forward, flushed together by one timer (all streams of a process share the setting). */
const due = new Set<MlStream>();
let flushTimer: NodeJS.Timeout | null = null;

function scheduleFlush(stream: MlStream, ms: number): void {
  due.add(stream);
  flushTimer ??= setTimeout(() => {
    flushTimer = null;
    for (const s of due) s.flush();
    due.clear();
  }, ms);
}

export class MlStream {
  private ws: WebSocket | null = null;
  /** The ws socket's TCP (or TLS) connection, corked around a flush. */
  private socket: net.Socket | null = null;
  /** Frames waiting for the next flush. */
  private batch: Buffer[] = [];
  private id: string | null = null;
  /** The last frame written to this session's socket (DELETE's last_sequence); null before the first. */
  private lastSent: number | null = null;
  private open = false;
  private closed = false;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private queue: Buffer[] = [];
  private nextSeq: number;
  private down = false;
  private dropped = { count: 0, total: 0, reason: '' };
  private mlDropped = { count: 0, total: 0 };
  private dropTimer: NodeJS.Timeout | null = null;

  constructor(private readonly o: MlStreamOptions) {
    this.nextSeq = o.init.start_sequence;
    void this.connect();
  }

  /** Forwards one binary message ([u64 seq][bytes], as the client sent it); never waits. */
  send(message: Buffer, seq: number): void {
    if (this.closed) return;
    this.nextSeq = Math.max(this.nextSeq, seq + 1);
    if (this.open && this.ws) {
      if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) return this.drop('backpressure');
      if (this.o.forwardEveryMs <= 0) return this.write(this.ws, message);
      if (this.batch.push(message) === 1) scheduleFlush(this, this.o.forwardEveryMs);
      return;
    }
    this.enqueue(message);
  }

  /** Sends the frames waiting, in one socket write; frames of a session that closed meanwhile wait for the next one. */
  flush(): void {
    const frames = this.batch;
    this.batch = [];
    if (!frames.length || this.closed) return;
    const ws = this.ws;
    if (!this.open || !ws) {
      for (const m of frames) this.enqueue(m);
      return;
    }
    this.socket?.cork();
    for (const m of frames) this.write(ws, m);
    this.socket?.uncork();
  }

  private write(ws: WebSocket, message: Buffer): void {
    ws.send(message);
    this.lastSent = Number(message.readBigUInt64BE(0));
  }

  private enqueue(message: Buffer): void {
    if (this.queue.length >= MAX_QUEUED_FRAMES) {
      this.queue.shift();
      this.drop('unavailable');
    }
    this.queue.push(message);
  }

  /** Lets the ML finish what it has (bounded by timeoutMs), then closes the stream. */
  async drain(timeoutMs: number): Promise<DrainResult> {
    const deadline = Date.now() + timeoutMs;
    const id = this.id;
    const ws = this.ws;
    this.stopRetrying();
    if (!id || !this.open) {
      this.close();
      return { drained: false, error: 'no open ML session' };
    }
    // Frames still waiting or in our socket buffer first, so the drain covers them.
    this.flush();
    while (ws && ws.readyState === WebSocket.OPEN && ws.bufferedAmount > 0 && Date.now() < deadline) await sleep(10);
    try {
      // last_sequence: the last frame sent on this session, so the ML knows when it has them all.
      const query = this.lastSent === null ? '' : `?last_sequence=${this.lastSent}`;
      const res = await fetch(`${this.o.baseUrl}/streaming/${encodeURIComponent(id)}${query}`, {
        method: 'DELETE',
        headers: { authorization: await this.o.authorization(), ...this.o.trace },
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
      // 204: drained, nothing to report; 200: the drain report (the contract's two answers).
      if (res.status === 204) return { drained: true };
      if (res.status !== 200) return { drained: false, error: `DELETE answered ${res.status}` };
      const report = DrainReport.safeParse(await res.json().catch(() => undefined));
      if (!report.success)
        return { drained: false, error: `DELETE answered 200 without a drain report: ${issues(report.error)}` };
      return report.data;
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
      return { drained: false, timed_out: timedOut, ...(timedOut ? {} : { error: (err as Error).message }) };
    } finally {
      this.close();
    }
  }

  /** Stops forwarding without a drain (the take moves to another instance, or this one stops). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopRetrying();
    this.reportDrops();
    if (this.dropTimer) clearTimeout(this.dropTimer);
    this.queue = [];
    this.batch = [];
    due.delete(this);
    this.ws?.close(1000);
    this.ws = null;
    this.socket = null;
    this.open = false;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const timeoutMs = this.o.startTimeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const authorization = await this.o.authorization();
      const res = await fetch(`${this.o.baseUrl}/streaming`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', ...this.o.trace },
        body: JSON.stringify({ ...this.o.init, start_sequence: this.queuedFrom() }),
        signal,
      }).catch((err: Error) => {
        if (signal.aborted) throw new Error(`POST /streaming did not answer within ${timeoutMs / 1000} s`);
        throw err;
      });
      if (res.status !== 201) throw new Error(`POST /streaming answered ${res.status}`);
      const parsed = StreamingSession.safeParse(await res.json().catch(() => undefined));
      if (!parsed.success) throw new Error(`POST /streaming answered 201 without a session: ${issues(parsed.error)}`);
      const session = parsed.data;
      if (this.closed) return;
      this.id = session.id;
      this.lastSent = null;
      // Audio does not compress: no permessage-deflate, whatever the ML service offers. The
      // connection is ours to make (ws's createConnection option) so that a flush can cork it.
      const secure = new URL(session.audio_url).protocol === 'wss:';
      // ws calls it with one options object; its type lists every overload of net.createConnection.
      const createConnection = ((opts: net.NetConnectOpts & tls.ConnectionOptions) =>
        (this.socket = secure ? tls.connect(opts) : net.connect(opts))) as typeof net.createConnection;
      const headers = { authorization, ...this.o.trace };
      // A larger ML message closes the socket with 1009 (ws): an answer, not an unbounded read.
      this.attach(
        new WebSocket(session.audio_url, {
          headers,
          perMessageDeflate: false,
          createConnection,
          maxPayload: ML_MESSAGE_MAX_BYTES,
          generateMask: zeroMask,
        }),
      );
    } catch (err) {
      this.retry((err as Error).message);
    }
  }

  private attach(ws: WebSocket): void {
    this.ws = ws;
    ws.on('open', () => {
      if (this.closed) return void ws.close(1000);
      this.open = true;
      this.attempt = 0;
      if (this.down) {
        this.down = false;
        this.o.onHealth({ source: 'core', code: 'ml_recovered', detail: { session_id: this.id } });
      }
      for (const m of this.queue.splice(0)) this.write(ws, m);
    });
    ws.on('message', (data, isBinary) => {
      if (!isBinary) return this.fromMl(String(data));
      this.reject({
        type: 'rejected',
        reason: 'binary',
        detail: 'the core takes only JSON text messages from the ML service',
      });
    });
    ws.on('error', (err) => this.o.log.debug({ err: err.message }, 'ML audio socket error'));
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.open = false;
      this.id = null;
      if (!this.closed) this.retry('ML audio socket closed');
    });
  }

  private fromMl(text: string): void {
    const read = parseMlMessage(text);
    if (!read.ok) return this.reject(read.rejection);
    const m = read.message;
    if (m.type === 'warning') {
      this.o.onHealth({ source: 'ml', code: m.code, detail: m.detail ?? {} });
    } else {
      this.mlDropped.count += m.count;
      this.mlDropped.total = m.total ?? this.mlDropped.total + m.count;
      this.scheduleDropReport();
    }
  }

  /** An ML message the core cannot use: answered on the socket, logged and counted, never dropped silently. */
  private reject(rejection: CoreRejection): void {
    instruments().mlRejected.add(1, { reason: rejection.reason });
    this.o.log.warn({ session_id: this.id, ...rejection }, 'ML message rejected');
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(rejection));
  }

  private drop(reason: string): void {
    this.dropped.count++;
    this.dropped.total++;
    this.dropped.reason = reason;
    this.scheduleDropReport();
  }

  private scheduleDropReport(): void {
    if (this.dropTimer || this.closed) return;
    this.dropTimer = setTimeout(() => {
      this.dropTimer = null;
      this.reportDrops();
    }, DROP_REPORT_MS);
    this.dropTimer.unref();
  }

  private reportDrops(): void {
    if (this.dropped.count) {
      this.o.onHealth({ source: 'core', code: 'ml_frames_dropped', detail: { ...this.dropped } });
      this.dropped.count = 0;
    }
    if (this.mlDropped.count) {
      this.o.onHealth({ source: 'ml', code: 'dropped', detail: { ...this.mlDropped } });
      this.mlDropped.count = 0;
    }
  }

  private retry(error: string): void {
    if (this.closed || this.retryTimer) return;
    const delay = Math.round(backoffMs(BACKOFF_MS, this.attempt++));
    if (!this.down) {
      this.down = true;
      this.o.onHealth({ source: 'core', code: 'ml_unavailable', detail: { error, retry_in_ms: delay } });
    }
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private stopRetrying(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** A re-created session starts at the oldest frame still queued for it. */
  private queuedFrom(): number {
    return this.queue.length ? Number(this.queue[0].readBigUInt64BE(0)) : this.nextSeq;
  }
}

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
