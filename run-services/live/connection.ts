// One client WebSocket: the hello handshake, a bounded send queue, ordered handling of what the
// client sends (commands and the frames after them stay in order, even while a command waits on
// the database), the lifetime limit and the close.
import type { OutgoingMessage } from './server-messages';
import { sleep } from '@mi/lib/async';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Config } from '@mi/lib/config';
import type { Logger } from '@mi/lib/telemetry/log';
import type { EventSink, EventStream } from './event-stream';
import {
  Command,
  CloseCode,
  Hello,
  describeIssues,
  type ClientCommand,
  type ErrorCode,
  type HelloMessage,
} from './protocol';
import type { Recorder, RecorderClient } from './recorder';

export interface ConnectionHost {
  config: Config;
  log: Logger;
  hello(conn: Connection, hello: HelloMessage): Promise<void>;
  command(conn: Connection, cmd: ClientCommand): Promise<void>;
  frame(conn: Connection, data: Buffer): void;
  lifetimeReached(conn: Connection): Promise<void>;
  closed(conn: Connection): void;
}

/** Messages waiting behind a slow command before further ones are refused. */
const MAX_QUEUED_MESSAGES = 256;
/** The same frame error is sent at most once per this interval (a client streaming into the void). */
const FRAME_ERROR_INTERVAL_MS = 1_000;
const CLOSE_HANDSHAKE_MS = 2_000;

export class Connection implements RecorderClient, EventSink {
  readonly id = randomUUID();
  userId: string | null = null;
  clientId: string | null = null;
  /** W3C trace context of the upgrade request or the hello: the default of its takes' traces. */
  trace: Record<string, string> | null = null;
  /** Its lines carry connection_id, request_id (the upgrade's), trace_id and, after hello, user_id. */
  log: Logger;
  ready = false;
  recorder: Recorder | null = null;
  stream: EventStream | null = null;
  /** The server closed it with ReconnectAdvised: the client is expected back. */
  advised = false;
  private closing = false;
  private queued = 0;
  private inbox: Promise<void> = Promise.resolve();
  private readonly helloTimer: NodeJS.Timeout;
  private readonly lifetimeTimer: NodeJS.Timeout;
  private readonly frameErrors = new Map<string, number>();

  constructor(
    readonly ws: WebSocket,
    private readonly host: ConnectionHost,
  ) {
    const c = host.config;
    this.log = host.log.child({ connection_id: this.id });
    ws.on('message', (data, isBinary) => this.onMessage(toBuffer(data), isBinary));
    ws.once('close', (code, reason) => {
      this.log.info({ code, reason: reason.toString(), reconnect_advised: this.advised }, 'connection closed');
      this.onClose();
    });
    ws.on('error', (err) => host.log.debug({ err: err.message, connection_id: this.id }, 'client socket error'));
    this.helloTimer = setTimeout(
      () => this.close(CloseCode.helloTimeout, 'no hello received'),
      c.LIVE_HELLO_TIMEOUT_SECONDS * 1000,
    );
    this.lifetimeTimer = setTimeout(() => void host.lifetimeReached(this), c.LIVE_CONNECTION_LIFETIME_SECONDS * 1000);
  }

  get open(): boolean {
    return !this.closing && this.ws.readyState === WebSocket.OPEN;
  }

  send(message: OutgoingMessage): boolean {
    if (!this.open) return false;
    const data = JSON.stringify(message);
    if (this.ws.bufferedAmount + data.length > this.host.config.LIVE_SEND_QUEUE_BYTES) {
      this.host.log.warn(
        { connection_id: this.id, buffered: this.ws.bufferedAmount },
        'closing a client that does not read',
      );
      this.close(CloseCode.slowReader, 'send queue full');
      return false;
    }
    this.ws.send(data);
    return true;
  }

  error(code: ErrorCode, message: string, ref: string | null): void {
    this.send({ type: 'error', code, message, ref });
  }

  /** An error about an audio frame, throttled per code. */
  frameError(code: ErrorCode, message: string): void {
    const now = Date.now();
    if (now - (this.frameErrors.get(code) ?? 0) < FRAME_ERROR_INTERVAL_MS) return;
    this.frameErrors.set(code, now);
    this.error(code, message, 'audio');
  }

  released(r: Recorder): void {
    if (this.recorder === r) this.recorder = null;
  }

  async drained(): Promise<void> {
    const limit = this.host.config.LIVE_SEND_QUEUE_BYTES / 2;
    while (this.open && this.ws.bufferedAmount > limit) await sleep(20);
  }

  fail(): void {
    this.close(CloseCode.serverError, 'could not read the events; reconnect with last_seq');
  }

  /** ReconnectAdvised, then close (1012): the client reconnects, replays and resumes. */
  advise(reason: 'lifetime' | 'shutdown'): void {
    if (!this.open) return;
    this.advised = true;
    this.send({ type: 'ReconnectAdvised', reason });
    this.close(CloseCode.reconnect, reason === 'shutdown' ? 'server shutting down' : 'connection lifetime reached');
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.clearTimers();
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(code, reason);
      // A peer that never completes the closing handshake is cut off.
      setTimeout(() => this.ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
    }
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closing) return;
    if (isBinary && this.ready && this.queued === 0) return this.host.frame(this, data);
    if (this.queued >= MAX_QUEUED_MESSAGES) {
      if (isBinary)
        this.frameError('buffer_full', 'too many messages waiting behind a command; resend this frame later');
      else this.error('bad_message', 'too many messages waiting behind a command', null);
      return;
    }
    this.queued++;
    this.inbox = this.inbox
      .then(() => this.handle(data, isBinary))
      .catch((err) => {
        this.host.log.error({ err, connection_id: this.id }, 'handling a client message failed');
        if (this.ready) this.error('unavailable', 'the server could not handle this message; try again', null);
        else this.close(CloseCode.serverError, 'could not complete the hello; reconnect');
      })
      .finally(() => this.queued--);
  }

  private async handle(data: Buffer, isBinary: boolean): Promise<void> {
    if (this.closing) return;
    if (!this.ready) return this.handleHello(data, isBinary);
    if (isBinary) return this.host.frame(this, data);
    const msg = parseJson(data);
    const type = typeof msg?.type === 'string' ? msg.type : null;
    if (!msg) return this.error('bad_message', 'text messages must be JSON objects with a type', null);
    if (type === 'hello') return this.error('bad_message', 'already authenticated', 'hello');
    const parsed = Command.safeParse(msg);
    if (!parsed.success) return this.error('bad_message', describeIssues(parsed.error), type);
    await this.host.command(this, parsed.data);
  }

  private async handleHello(data: Buffer, isBinary: boolean): Promise<void> {
    clearTimeout(this.helloTimer);
    const msg = isBinary ? null : parseJson(data);
    if (msg?.type !== 'hello') return this.close(CloseCode.unauthorized, 'the first message must be hello');
    const parsed = Hello.safeParse(msg);
    if (!parsed.success) {
      const tokenProblem = parsed.error.issues.some((i) => i.path[0] === 'token');
      return this.close(
        tokenProblem ? CloseCode.unauthorized : CloseCode.badHello,
        describeIssues(parsed.error).slice(0, 120),
      );
    }
    await this.host.hello(this, parsed.data);
  }

  private onClose(): void {
    this.closing = true;
    this.clearTimers();
    this.stream?.close();
    this.host.closed(this);
  }

  private clearTimers(): void {
    clearTimeout(this.helloTimer);
    clearTimeout(this.lifetimeTimer);
  }
}

function parseJson(data: Buffer): Record<string, unknown> | null {
  try {
    const v = JSON.parse(data.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
