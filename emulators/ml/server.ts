// The fake ML service of the local stack and the tests, written from the published contract
// (./protocol.ts, not the core's contract module): speaks the streaming contract
// (POST /streaming, audio over a WebSocket, DELETE /streaming/{id} with a bounded drain), calls
// the core back with the service token, and runs the batch pass on `recording.finalized`.
// Modes for fault tests: `hang` accepts sessions and frames but never processes them nor
// answers a DELETE; `refuse` answers 503 to POST /streaming. Faults (./faults.ts, setFault) are
// the mistakes the conformance kit must catch.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { sleep } from '@mi/lib/async';
import { bearerToken, safeEqual } from '@mi/lib/adapters/auth';
import { createBus, type Bus } from '@mi/lib/adapters/bus';
import type { Config } from '@mi/lib/config';
import { createLogger, type Logger } from '@mi/lib/telemetry/log';
import {
  batchSubscription,
  FINALIZED_RULES,
  read,
  START_RULES,
  type RecordingFinalized,
  type StreamingStart,
} from './protocol';
import { type BatchOutcome, runBatchPass } from './batch';
import { createRestClient } from '@mi/client';
import { StreamingSession, type MlLimits } from './session';
import { claimAndDie, type FakeMlFault, type FaultState } from './faults';

export type FakeMlMode = 'normal' | 'hang' | 'refuse';

export type FakeMlConfig = MlLimits &
  Pick<
    Config,
    'ML_PORT' | 'GOOGLE_CLOUD_PROJECT' | 'PUBSUB_EMULATOR_HOST' | 'PUBSUB_TOPIC_RECORDING_FINALIZED' | 'LOG_LEVEL'
  >;

export interface FakeMlOptions {
  /** Default: config.ML_PORT; 0 picks a free port. */
  port?: number;
  host?: string;
  coreUrl: string;
  serviceToken: string;
  config: FakeMlConfig;
  /** The bus to take `recording.finalized` from; by default one on config's Pub/Sub (emulator). */
  bus?: Bus;
  log?: Logger;
  /** For tests: awaited once a batch pass holds its claim, before its first write (a slow pass). */
  batchPause?: (msg: RecordingFinalized) => Promise<void>;
}

export interface FakeMl {
  url: string;
  stop(): Promise<void>;
  setMode(mode: FakeMlMode): void;
  /** Breaks the contract as `fault` says (null: keeps it); `delayMs` for the slow faults. */
  setFault(fault: FakeMlFault | null, delayMs?: number): void;
  /** Open sessions (for tests: counters, init). */
  sessions(): StreamingSession[];
  /** The batch passes that ended, in order (for tests: a redelivery that changed nothing ends 'skipped'). */
  batchPasses(): { transcription_id: string | null | undefined; outcome: BatchOutcome }[];
  /** The trace context each streaming request arrived with, in order (for tests of propagation). */
  requestTraces(): { request: 'start' | 'audio' | 'drain'; session: string; trace: Record<string, string> }[];
}

const MAX_BODY_BYTES = 64 * 1024;
const TRACE_HEADERS = ['traceparent', 'tracestate'];

function send(res: ServerResponse, status: number, body?: unknown) {
  if (body === undefined) return void res.writeHead(status).end();
  const problem = status >= 400;
  res.writeHead(status, { 'content-type': problem ? 'application/problem+json' : 'application/json' });
  res.end(JSON.stringify(problem ? { type: 'about:blank', title: String(status), status, detail: body } : body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export async function startFakeMl(opts: FakeMlOptions): Promise<FakeMl> {
  const { config, serviceToken } = opts;
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL, name: 'fake-ml' });
  // The core's REST API with the service token; a call continues the trace passed in its headers.
  const faults: FaultState = { fault: null, delayMs: 0 };
  const fault = () => faults.fault;
  const token = () => (fault() === 'wrong-core-token' ? `${serviceToken}-wrong` : serviceToken);
  const core = createRestClient({ baseUrl: opts.coreUrl, token, timeoutMs: 10_000 });
  const sessions = new Map<string, StreamingSession>();
  const heldRequests = new Set<ServerResponse>();
  let mode: FakeMlMode = 'normal';
  let baseUrl = '';

  const authorized = (req: IncomingMessage, on: 'start' | 'socket' | 'drain') => {
    const given = bearerToken(req.headers.authorization);
    switch (fault()) {
      case 'no-auth':
        return true;
      case 'open-socket':
        if (on !== 'start') return true;
        break;
      case 'weak-auth':
        return given !== null;
      case 'wrong-auth-header': {
        const key = req.headers['x-api-key'];
        return typeof key === 'string' && safeEqual(key, serviceToken);
      }
    }
    return given !== null && safeEqual(given, serviceToken);
  };
  const requestTraces: ReturnType<FakeMl['requestTraces']> = [];
  const traceOf = (req: IncomingMessage) =>
    Object.fromEntries(
      TRACE_HEADERS.flatMap((h) => (typeof req.headers[h] === 'string' ? [[h, req.headers[h] as string]] : [])),
    );

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://ml');
    if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
    if (url.pathname === '/streaming') {
      if (!authorized(req, 'start')) return send(res, 401, 'missing or invalid service token');
      if (req.method !== 'POST') return send(res, 405, 'use POST');
      if (mode === 'refuse') return send(res, 503, 'the ML service refuses new sessions (fault mode)');
      let body: StreamingStart;
      try {
        const parsed = read<StreamingStart>(START_RULES, await readJson(req));
        if ('invalid' in parsed) return send(res, 422, `invalid fields: ${parsed.invalid.join(', ')}`);
        body = parsed.ok;
      } catch {
        return send(res, 400, 'malformed JSON body');
      }
      const id = randomUUID();
      requestTraces.push({ request: 'start', session: id, trace: traceOf(req) });
      const session = new StreamingSession({ id, ...body }, config, core, log, () => mode === 'hang', traceOf(req));
      session.faults = faults;
      sessions.set(id, session);
      const created = { id, audio_url: `${baseUrl.replace(/^http/, 'ws')}/streaming/${id}/audio` };
      if (fault() === 'slow-start') await sleep(faults.delayMs);
      if (fault() !== 'text-plain-201') return send(res, 201, created);
      return void res.writeHead(201, { 'content-type': 'text/plain' }).end(JSON.stringify(created));
    }

    const m = /^\/streaming\/([0-9a-f-]{36})$/.exec(url.pathname);
    if (m) {
      if (!authorized(req, 'drain')) return send(res, 401, 'missing or invalid service token');
      if (req.method !== 'DELETE') return send(res, 405, 'use DELETE');
      const session = sessions.get(m[1]);
      if (!session) return send(res, 404, 'unknown streaming session');
      requestTraces.push({ request: 'drain', session: m[1], trace: traceOf(req) });
      if (mode === 'hang') {
        heldRequests.add(res); // never answered; released by stop()
        res.on('close', () => heldRequests.delete(res));
        return;
      }
      if (fault() === 'slow-drain') await sleep(faults.delayMs);
      const drained = fault() === 'ignored-drain' ? true : await session.drain(config.ML_DRAIN_TIMEOUT_SECONDS * 1000);
      sessions.delete(session.init.id);
      if (fault() !== 'ignored-drain') session.close(); // ignored: it goes on posting
      return send(res, 200, { drained, processed: session.processed, dropped: session.dropped });
    }
    if (!authorized(req, 'start')) return send(res, 401, 'missing or invalid service token');
    return send(res, 404, 'no such route');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log.warn({ err: String(err) }, 'fake ML: request failed');
      if (!res.headersSent) send(res, 500, 'unexpected error');
    });
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  server.on('upgrade', (req, socket, head) => {
    const m = /^\/streaming\/([0-9a-f-]{36})\/audio$/.exec(new URL(req.url ?? '/', 'http://ml').pathname);
    const session = m ? sessions.get(m[1]) : undefined;
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (!authorized(req, 'socket')) return refuse(401, 'Unauthorized');
    if (!session) return refuse(404, 'Not Found');
    if (session.socket) return refuse(409, 'Conflict');
    requestTraces.push({ request: 'audio', session: m![1], trace: traceOf(req) });
    wss.handleUpgrade(req, socket, head, (ws) => {
      session.socket = ws;
      ws.on('message', (data, isBinary) => {
        if (isBinary) session.accept(Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]));
      });
      ws.on('close', () => {
        if (session.socket === ws) session.socket = null;
      });
      ws.on('error', () => undefined);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? config.ML_PORT, opts.host ?? '127.0.0.1', resolve);
  });
  const address = server.address() as AddressInfo;
  baseUrl = `http://${opts.host ?? '127.0.0.1'}:${address.port}`;

  const batchPasses: ReturnType<FakeMl['batchPasses']> = [];
  const ownBus = !opts.bus;
  const bus =
    opts.bus ?? createBus({ projectId: config.GOOGLE_CLOUD_PROJECT, emulatorHost: config.PUBSUB_EMULATOR_HOST, log });
  let subscription: { close(): Promise<void> };
  try {
    // The one work queue every ML process shares: each message reaches one of them.
    const topic = config.PUBSUB_TOPIC_RECORDING_FINALIZED;
    subscription = await bus.subscribeQueue(topic, batchSubscription(topic), async (message) => {
      const parsed = read<RecordingFinalized>(FINALIZED_RULES, message.data);
      if ('invalid' in parsed) {
        const fields = parsed.invalid;
        log.warn({ message_id: message.id, fields }, 'fake ML: ignoring a malformed recording.finalized message');
        return;
      }
      if (fault() === 'claim-only') return claimAndDie(core, parsed.ok);
      // Throws only when the core could not be reached: the message is redelivered.
      const outcome = await runBatchPass(core, config, parsed.ok, log, opts.batchPause);
      batchPasses.push({ transcription_id: parsed.ok.transcription_id, outcome });
    });
  } catch (err) {
    await new Promise((r) => server.close(r));
    if (ownBus) await bus.close();
    throw err;
  }

  return {
    url: baseUrl,
    batchPasses: () => batchPasses,
    setMode(next) {
      mode = next;
      if (next !== 'hang') for (const s of sessions.values()) s.pump();
    },
    setFault(next, delayMs = 0) {
      faults.fault = next;
      faults.delayMs = delayMs;
    },
    sessions: () => [...sessions.values()],
    requestTraces: () => [...requestTraces],
    async stop() {
      await subscription.close();
      if (ownBus) await bus.close();
      for (const s of sessions.values()) s.close();
      sessions.clear();
      for (const res of heldRequests) res.destroy();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
