// Live-service test kit: a database per file shared by its instances, service instances (REST app and
// /ws on one real HTTP server, like the local stack), the fake ML service, and a WebSocket
// client that records what it receives.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import WebSocket from 'ws';
import { mintDevToken } from '@mi/lib/adapters/auth';
import type { Bus } from '@mi/lib/adapters/bus';
import { loadConfig, type Config } from '@mi/lib/config';
import type pg from 'pg';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { listManifest } from '@mi/lib/repositories/manifest';
import { createLogger } from '@mi/lib/telemetry/log';
import { createRuntime, type Runtime } from '@mi/lib/adapters/runtime';
import { createLiveService, type LiveService, type LiveServiceOptions } from '@mi/live/service';
import { createApp } from '../../functions/api/app';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import { fileDatabase, TEST_SECRETS } from '../harness';
import { runtimeUrl } from '../support/database';
import { startServer, type ServerProcess } from './server-process';

/** Small segment and settle values keep the tests fast. */
export const FAST_RECORDING_ENV: Record<string, string> = {
  RECORDING_SEGMENT_TARGET_MS: '1000',
  RECORDING_PROGRESS_EVERY_FRAMES: '50',
  RECORDING_PROGRESS_INTERVAL_SECONDS: '1',
  RECORDING_STOP_SETTLE_MS: '200',
  RECORDING_ML_DRAIN_TIMEOUT_SECONDS: '2',
  RECORDING_DISCONNECT_GRACE_SECONDS: '60',
  ML_DRAIN_TIMEOUT_SECONDS: '0.5',
  ML_NO_AUDIO_WINDOW_SECONDS: '1',
};

/** One config per test file: its own bucket and topics, so files never see each other's data. */
export function fileEnv(): Record<string, string> {
  const tag = randomUUID().slice(0, 8);
  return {
    APP_ENV: 'test',
    LOG_LEVEL: 'error',
    ...TEST_SECRETS,
    ...inject('emulatorEnv'),
    STORAGE_BUCKET: `live-${tag}`,
    PUBSUB_TOPIC_EVENTS: `events-${tag}`,
    PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${tag}`,
    ...FAST_RECORDING_ENV,
  };
}

export async function openTestDatabase(): Promise<OpenedDatabase> {
  const database = await fileDatabase();
  const db = createDatabase(database.url);
  return {
    db,
    url: database.url,
    async close() {
      await db.close();
      await database.close();
    },
  };
}

/** One instance of useInstances: its options, and its environment on top of the file's. */
export type InstanceSpec = InstanceOptions & { env?: Record<string, string> };

/** What useInstances gives a test file; read it inside the tests (it is filled before them). */
export interface LiveSetup {
  /** The in-process instances, in the order of their specs. */
  readonly instances: Instance[];
  readonly database: OpenedDatabase;
  /** The file's environment (fileEnv() with the given env) every instance starts from. */
  readonly env: Record<string, string>;
  /**
   * The Cloud Run entry (server.ts) as a child process on this database and environment (with
   * `extra`), `workers` workers; resolves once each listens; killed after the test.
   */
  startServer(extra?: Record<string, string>, workers?: number): Promise<ServerProcess>;
}

/**
 * The multi-instance live setup of a test file: a database of its own and `specs.length`
 * instances on it (or `specs` alike), as Cloud Run instances sharing one set of emulators.
 * Started together before the file's tests, each by readiness (startInstance resolves once its
 * server listens and its service runs: no time budget but the hook's), stopped after them; server
 * processes a test starts are killed after it.
 */
export function useInstances(specs: number | InstanceSpec[], env: Record<string, string> = {}): LiveSetup {
  const each: InstanceSpec[] = typeof specs === 'number' ? Array.from({ length: specs }, () => ({})) : specs;
  let database: OpenedDatabase;
  let fileSettings: Record<string, string>;
  let instances: Instance[] = [];
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    database = await openTestDatabase();
    fileSettings = { ...fileEnv(), ...env };
    const started = await Promise.allSettled(
      each.map(({ env: own, ...opts }) => startInstance(database, { ...fileSettings, ...own }, opts)),
    );
    instances = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason; // those that started are stopped after
  });
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
  afterAll(async () => {
    await Promise.allSettled(instances.map((i) => i.close()));
    await database?.close();
  });
  return {
    get instances() {
      return instances;
    },
    get database() {
      return database;
    },
    get env() {
      return fileSettings;
    },
    startServer: (extra = {}, workers = 1) =>
      startServer({ ...fileSettings, DATABASE_URL: database.url, ...extra }, workers, children),
  };
}

/**
 * One live instance without an ML service on a database of the calling test file's own, started
 * before its tests and closed after them; read its parts inside the tests.
 */
export function useInstance(
  env: Record<string, string> = {},
  opts: Pick<InstanceOptions, 'served'> = {},
): {
  readonly instance: Instance;
  readonly database: OpenedDatabase;
} {
  const setup = useInstances([opts], { ML_SERVICE_URL: 'http://127.0.0.1:9', ...env });
  return {
    get instance() {
      return setup.instances[0];
    },
    get database() {
      return setup.database;
    },
  };
}

export interface Instance {
  config: Config;
  rt: Runtime;
  /** The pool the live service serves from (its own login); rt.db is the tests' owner view. */
  served: Database;
  live: LiveService;
  /** The fake ML service, when started with `ml: true`. */
  ml: FakeMl | null;
  /** http://127.0.0.1:port (REST) */
  url: string;
  /** ws://127.0.0.1:port/ws */
  wsUrl: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * `db` with each query (outside a transaction, in every scope `as` declares) passed through
 * `around`, which runs it with `run()`: how a test watches or holds the live service's reads.
 */
export function aroundQueries(
  db: Database,
  around: (name: string, params: unknown[] | undefined, run: () => Promise<pg.QueryResult>) => Promise<pg.QueryResult>,
): Database {
  return new Proxy(db, {
    get(target, key) {
      if (key === 'as') return (scope: Parameters<Database['as']>[0]) => aroundQueries(target.as(scope), around);
      if (key !== 'query') return Reflect.get(target, key, target);
      return (name: string, text: string, params?: unknown[]) =>
        around(name, params, () => target.query(name, text, params));
    },
  });
}

export type InstanceOptions = LiveServiceOptions & {
  ml?: boolean;
  logDestination?: { write(line: string): void };
  /** The instance's bus (default: its own on the Pub/Sub emulator); closed with the instance. */
  bus?: Bus;
  /** Wraps the database the live service serves from (its own login), for tests that watch or hold its queries. */
  served?: (db: Database) => Database;
};

/**
 * A core instance: REST app and live service on one HTTP server on the shared database, and,
 * with `ml: true`, a fake ML service calling it back.
 */
export async function startInstance(
  database: OpenedDatabase,
  env: Record<string, string>,
  opts: InstanceOptions = {},
): Promise<Instance> {
  const config = loadConfig(env);
  const rt = createRuntime(config, database.db, {
    log: createLogger({ level: config.LOG_LEVEL, name: 'live-test', destination: opts.logDestination }),
    overrides: opts.bus && { bus: opts.bus },
  });
  await rt.store.ensureBucket();
  await rt.bus.ensureTopic(config.PUBSUB_TOPIC_EVENTS);
  let live: LiveService | null = null;
  // Each part serves as its own login (row policies in force); rt (the tests' view) stays the owner.
  const apiDb = createDatabase(runtimeUrl(inject('database'), database.url, 'api'));
  const liveLogin = createDatabase(runtimeUrl(inject('database'), database.url, 'live'));
  const liveDb = opts.served ? opts.served(liveLogin) : liveLogin;
  const server = createServer(getRequestListener(createApp({ ...rt, db: apiDb }).fetch));
  server.on('upgrade', (req, socket, head) => {
    if (live && new URL(req.url ?? '/', 'http://x').pathname === '/ws') live.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ml = opts.ml
    ? await startFakeMl({ port: 0, coreUrl: url, serviceToken: config.SERVICE_AUTH_TOKEN, config })
    : null;
  const { ml: _ml, logDestination: _log, bus: _bus, served: _served, ...liveOpts } = opts;
  live = createLiveService(
    { ...rt, db: liveDb },
    { heartbeatMs: 500, leaseTtlMs: 5_000, ...(ml ? { mlUrl: ml.url } : {}), ...liveOpts },
  );
  await live.start();
  const service = live;
  return {
    config,
    rt,
    served: liveDb,
    live: service,
    ml,
    server,
    url,
    wsUrl: `${url.replace('http', 'ws')}/ws`,
    async close() {
      await service.shutdown();
      await ml?.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await rt.close();
      await Promise.all([apiDb.close(), liveDb.close()]);
    },
  };
}

export const token = (config: Config, name: string) => mintDevToken(config.IDENTITY_SECRET_KEY!, name);

/** Creates a meeting through the REST API; returns its id. */
export async function createMeeting(instance: Instance, userToken: string, sourceType = 'recording'): Promise<string> {
  const res = await fetch(`${instance.url}/meetings`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${userToken}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ title: `meeting ${randomUUID().slice(0, 6)}`, source_type: sourceType }),
  });
  if (res.status !== 201) throw new Error(`POST /meetings answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** 100 ms of 16 kHz 16-bit PCM, different for every sequence number (a tone, not silence). */
export function pcmFrame(seq: number): Buffer {
  const buf = Buffer.alloc(3200);
  for (let i = 0; i < 1600; i++)
    buf.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * (seq * 1600 + i)) / 16000) + (seq % 97)), i * 2);
  return buf;
}

export function silentFrame(): Buffer {
  return Buffer.alloc(3200);
}

export function frameMessage(seq: number, bytes: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeBigUInt64BE(BigInt(seq));
  return Buffer.concat([header, bytes]);
}

/** The stored audio of a take: manifest rows (checked not to overlap) and their objects in order. */
export async function storedAudio(instance: Instance, meetingId: string, audioVersion: number) {
  const rows = await listManifest(instance.rt.db, meetingId, audioVersion);
  for (let i = 1; i < rows.length; i++) {
    if (rows[i].start_sequence <= rows[i - 1].end_sequence)
      throw new Error(
        `overlapping manifest rows ${rows[i - 1].start_sequence}-${rows[i - 1].end_sequence} and ${rows[i].start_sequence}-${rows[i].end_sequence}`,
      );
  }
  const parts = await Promise.all(rows.map((r) => instance.rt.store.readAll(r.object_name)));
  return { rows, bytes: Buffer.concat(parts), sequences: rows.flatMap((r) => range(r.start_sequence, r.end_sequence)) };
}

export const range = (start: number, end: number) => Array.from({ length: end - start + 1 }, (_, i) => start + i);

export type Message = Record<string, any>;

/**
 * What a message must hold: each named field equal to the value given, or passing the function
 * given, which is handed that field's value. A match sees only the message it is tried on, so
 * it picks the same message whenever the wait begins (a predicate reading other state, such as
 * how many messages arrived, once returned an earlier message than the one meant).
 */
export type Match = Readonly<Record<string, string | number | boolean | null | ((value: any) => boolean)>>;
/** A field test that ignores its field's value is a type error. */
type FieldsRead<M> = { readonly [K in keyof M]: M[K] extends () => unknown ? never : M[K] };

const matches = (m: Message, match: Match) =>
  Object.entries(match).every(([field, want]) => (typeof want === 'function' ? want(m[field]) : m[field] === want));

export class TestClient {
  readonly messages: Message[] = [];
  readonly clientId: string;
  closed: Promise<{ code: number; reason: string }>;
  private waiters: { test: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];

  private constructor(
    readonly ws: WebSocket,
    clientId: string,
  ) {
    this.clientId = clientId;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const m = JSON.parse(String(data)) as Message;
      this.messages.push(m);
      this.waiters = this.waiters.filter((w) => (w.test(m) ? (w.resolve(m), false) : true));
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  /** Opens a socket without saying hello (with these upgrade request headers). */
  static async open(wsUrl: string, headers: Record<string, string> = {}): Promise<TestClient> {
    const ws = new WebSocket(wsUrl, { headers });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new TestClient(ws, randomUUID());
  }

  /** Opens, says hello and waits for ready. */
  static async connect(
    wsUrl: string,
    userToken: string,
    opts: { lastSeq?: number; clientId?: string } = {},
  ): Promise<TestClient> {
    const client = await TestClient.open(wsUrl);
    client.hello(userToken, opts);
    await client.waitFor({ type: 'ready' });
    return client;
  }

  /** Says hello (without waiting for ready). */
  hello(userToken: string, opts: { lastSeq?: number; clientId?: string } = {}): void {
    (this as { clientId: string }).clientId = opts.clientId ?? this.clientId;
    this.send({
      type: 'hello',
      token: userToken,
      client_id: this.clientId,
      ...(opts.lastSeq !== undefined ? { last_seq: opts.lastSeq } : {}),
    });
  }

  send(message: Message): void {
    this.ws.send(JSON.stringify(message));
  }

  frame(seq: number, bytes: Buffer = pcmFrame(seq)): void {
    this.ws.send(frameMessage(seq, bytes));
  }

  /** Where the messages received so far end: `waitFor(…, { from })` looks only past it. */
  mark(): number {
    return this.messages.length;
  }

  /**
   * The first message (received so far, or past the mark `from`, or later) that matches. To wait
   * for a count of messages, poll it (test/support/poll.ts); for an event, name its seq.
   */
  waitFor<M extends Match>(
    match: M & FieldsRead<M>,
    { timeoutMs = 20_000, from = 0 }: { timeoutMs?: number; from?: number } = {},
  ): Promise<Message> {
    return this.first(
      (m) => matches(m, match),
      from,
      timeoutMs,
      JSON.stringify(match, (_, v) => (typeof v === 'function' ? String(v) : v)),
    );
  }

  private first(test: (m: Message) => boolean, from: number, timeoutMs: number, what: string): Promise<Message> {
    const found = this.messages.slice(from).find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { test, resolve: (m: Message) => (clearTimeout(timer), resolve(m)) };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(
          new Error(
            `no message matching ${what} within ${timeoutMs} ms; got: ${JSON.stringify(this.messages.slice(-8))}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Sends a command and waits for its answer: a message of `answer` type for the meeting, or an error about the command. */
  command(message: Message, answer: string, timeoutMs = 20_000): Promise<Message> {
    const from = this.mark();
    this.send(message);
    return this.first(
      (m) =>
        (m.type === answer && m.meeting_id === message.meeting_id) || (m.type === 'error' && m.ref === message.type),
      from,
      timeoutMs,
      `${answer} or an error about ${message.type}`,
    );
  }

  ofType(type: string): Message[] {
    return this.messages.filter((m) => m.type === type);
  }

  /** Waits for an AudioStoredProgressEvent covering `seq`. */
  acked(meetingId: string, seq: number, timeoutMs = 30_000): Promise<Message> {
    return this.waitFor(
      { type: 'AudioStoredProgressEvent', meeting_id: meetingId, highest_contiguous_sequence: (n) => n >= seq },
      { timeoutMs },
    );
  }

  start(meetingId: string, extra: Message = {}): Promise<Message> {
    return this.command(
      { type: 'StartRecordingCommand', meeting_id: meetingId, encoding: 'pcm_s16le', sample_rate: 16000, ...extra },
      'RecordingStarted',
    );
  }

  resume(meetingId: string, audioVersion: number): Promise<Message> {
    return this.command(
      { type: 'ResumeRecordingCommand', meeting_id: meetingId, audio_version: audioVersion },
      'RecordingResumed',
    );
  }

  stop(meetingId: string, timeoutMs = 30_000): Promise<Message> {
    return this.command({ type: 'StopRecordingCommand', meeting_id: meetingId }, 'RecordingStopped', timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}
