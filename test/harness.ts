// Test harness: one real API per test file, on a database of its own (native PostgreSQL cloned
// from the run's template, or a fresh PGlite; see support/database.ts),
// the shared emulators from the global setup, served over real HTTP on a free port.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { DestinationStream } from 'pino';
import { inject } from 'vitest';
import { mintDevToken } from '@mi/lib/adapters/auth';
import type { BusHandler } from '@mi/lib/adapters/bus';
import { instanceTopic } from '@mi/lib/fanout/topics';
import { loadConfig, type Config } from '@mi/lib/config';
import { databaseOptions } from '@mi/lib/db/open';
import { listenFrom } from '@mi/lib/events/outbox';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { createLogger } from '@mi/lib/telemetry/log';
import { createRuntime, type Runtime } from '@mi/lib/adapters/runtime';
import { createApp } from '../functions/api/app';
import { createTestDatabase, runtimeUrl, type TestDatabase } from './support/database';
import type { Doc } from './support/openapi';
import type { BodyOf } from './support/response-body';
import { responseChecker, type ResponseChecker } from './support/response-schemas';

export const TEST_SECRETS = {
  IDENTITY_SECRET_KEY: 'test-identity-secret-key-0123456789',
  SERVICE_AUTH_TOKEN: 'test-service-token-0123456789abcdef',
};

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    APP_ENV: 'test',
    LOG_LEVEL: 'warn',
    ...TEST_SECRETS,
    ...inject('emulatorEnv'),
    // Per-file bucket and topic keep test files from seeing each other's objects and events.
    STORAGE_BUCKET: `test-${randomUUID().slice(0, 8)}`,
    PUBSUB_TOPIC_EVENTS: `events-${randomUUID().slice(0, 8)}`,
    ...env,
  });
}

export interface ApiHarness {
  url: string;
  config: Config;
  rt: Runtime;
  /** A user token (the user row is created on first request). */
  token(name: string, opts?: Parameters<typeof mintDevToken>[2]): Promise<string>;
  serviceToken: string;
  /** The body is typed from the generated client schema by method and path (support/response-body.ts). */
  request<M extends string, P extends string>(
    method: M,
    path: P,
    opts?: RequestOptions,
  ): Promise<TestResponse<BodyOf<M, P>>>;
  /** POST with an Idempotency-Key (a fresh one unless given), as user-facing creates require. */
  post<P extends string>(
    token: string,
    path: P,
    body?: unknown,
    key?: string,
  ): Promise<TestResponse<BodyOf<'POST', P>>>;
  /** A request as the ML service (its token), typed as `request`. */
  service<M extends string, P extends string>(
    method: M,
    path: P,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<TestResponse<BodyOf<M, P>>>;
  /** The pool the API serves from (its own login): its retries, its connections. rt.db is the tests' owner view. */
  served: Database;
  /** rt as the sweep runs: its own login (mi_sweep), for runSweep. */
  sweeper: Runtime;
  /** The user id behind a token (GET /me). */
  userId(token: string): Promise<string>;
  /** A person row of the user, inserted directly; returns its id. */
  person(ownerId: string, name?: string): Promise<string>;
  /** A meeting of the user, created through the API; returns its id. */
  meeting(token: string, sourceType?: string): Promise<string>;
  /** n transcript segments of the meeting (a new transcription of it); their ids by start_ms. */
  segments(token: string, meetingId: string, n: number): Promise<string[]>;
  /** The user's latest n outbox event payloads, oldest first. */
  lastEvents(ownerId: string, n: number): Promise<any[]>;
  /** The user's latest outbox event payload (undefined if none). */
  lastEvent(ownerId: string): Promise<any>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  raw?: BodyInit;
  headers?: Record<string, string>;
}

/** An answer; `body` is the parsed JSON (a problem+json on an error status). */
export interface TestResponse<B = unknown> {
  status: number;
  headers: Headers;
  body: B;
  text: string;
}

export interface StartOptions {
  /** Where the API's pino logs go (e.g. a collector in tests that inspect log lines). */
  logDestination?: DestinationStream;
  /** The database to serve from (default: a new one of this file's, closed with the API). */
  database?: TestDatabase;
}

export async function startApi(env: Record<string, string> = {}, opts: StartOptions = {}): Promise<ApiHarness> {
  const config = testConfig(env);
  const database = opts.database ?? (await fileDatabase());
  const db = createDatabase(database.url, databaseOptions(config));
  const rt = createRuntime(config, db, {
    log: createLogger({
      level: config.LOG_LEVEL,
      name: 'test',
      destination: opts.logDestination,
      project: config.GOOGLE_CLOUD_PROJECT,
    }),
  });
  await rt.store.ensureBucket();
  await rt.bus.ensureTopic(config.PUBSUB_TOPIC_EVENTS);
  // The API serves as its own login (row policies in force); rt (the tests' view) stays the owner.
  const apiDb = createDatabase(runtimeUrl(inject('database'), database.url, 'api'), databaseOptions(config));
  const app = createApp({ ...rt, db: apiDb });
  const sweepDb = createDatabase(runtimeUrl(inject('database'), database.url, 'sweep'), databaseOptions(config));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  // fetch keeps connections for 4 s; a server closing idle ones at 5 s races it when the machine
  // is loaded (ECONNRESET on the next request). The client always closes first this way.
  (server as import('node:http').Server).keepAliveTimeout = 60_000;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function request<M extends string, P extends string>(
    method: M,
    path: P,
    opts: RequestOptions = {},
  ): Promise<TestResponse<BodyOf<M, P>>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body = opts.raw;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, { method, headers, body, duplex: 'half' } as RequestInit);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.status >= 200 && res.status < 300 && parsed !== undefined && path !== '/openapi.json') {
      checkResponse ??= responseChecker((await (await fetch(`${url}/openapi.json`)).json()) as Doc);
      checkResponse(method, path, res.status, parsed);
    }
    return { status: res.status, headers: res.headers, body: parsed as BodyOf<M, P>, text };
  }
  let checkResponse: ResponseChecker | undefined;

  const post = <P extends string>(token: string, path: P, body?: unknown, key: string = randomUUID()) =>
    request('POST', path, { token, body, headers: { 'idempotency-key': key } });

  async function lastEvents(ownerId: string, n: number): Promise<any[]> {
    const { rows } = await rt.db.query(
      'test.events',
      'SELECT payload FROM event_outbox WHERE user_id = $1 ORDER BY seq DESC LIMIT $2',
      [ownerId, n],
    );
    return rows.map((r) => r.payload).reverse();
  }

  return {
    url,
    config,
    rt,
    served: apiDb,
    sweeper: { ...rt, db: sweepDb },
    token: (name, opts) => mintDevToken(config.IDENTITY_SECRET_KEY!, name, opts),
    serviceToken: config.SERVICE_AUTH_TOKEN,
    request,
    post,
    service: (method, path, body, headers = {}) =>
      request(method, path, { token: config.SERVICE_AUTH_TOKEN, body, headers }),
    userId: async (token) => (await request('GET', '/me', { token })).body.id,
    async person(ownerId, name = `p-${randomUUID().slice(0, 8)}`) {
      const { rows } = await rt.db.query<{ id: string }>(
        'test.person',
        'INSERT INTO person (user_id, display_name) VALUES ($1, $2) RETURNING id',
        [ownerId, name],
      );
      return rows[0].id;
    },
    meeting: async (token, sourceType = 'text') =>
      (await post(token, '/meetings', { title: 'm', source_type: sourceType })).body.id,
    async segments(token, meetingId, n) {
      const t = (await post(token, `/meetings/${meetingId}/transcriptions`)).body.id;
      const segments = Array.from({ length: n }, (_, i) => ({ text: `s${i}`, start_ms: i * 1000 }));
      const appended = await request('POST', `/transcriptions/${t}/segments`, {
        token: config.SERVICE_AUTH_TOKEN,
        body: { segments },
      });
      if (appended.status !== 204) throw new Error(`appending segments answered ${appended.status}`);
      const { rows } = await rt.db.query<{ id: string }>(
        'test.segments',
        'SELECT id FROM transcript_segment WHERE transcription_id = $1 ORDER BY start_ms',
        [t],
      );
      return rows.map((r) => r.id);
    },
    lastEvents,
    lastEvent: async (ownerId) => (await lastEvents(ownerId, 1))[0],
    async close() {
      await new Promise((r) => server.close(r));
      await rt.close();
      await Promise.all([db.close(), apiDb.close(), sweepDb.close()]);
      if (!opts.database) await database.close();
    },
  };
}

/** A database of this test file's own on the run's engine (see support/database.ts). */
export function fileDatabase(opts: { schema?: boolean } = {}): Promise<TestDatabase> {
  return createTestDatabase(inject('database'), opts);
}

/**
 * Listens to a user's events as a live instance does: a topic of its own, and presence naming it
 * (publishers address the instances presence names).
 */
export async function listenToEvents(
  rt: Runtime,
  userId: string,
  handler: BusHandler,
): Promise<{ close(): Promise<void> }> {
  const instance = `listener-${randomUUID().slice(0, 8)}`;
  const topic = instanceTopic(rt.config.PUBSUB_TOPIC_EVENTS, instance);
  await rt.bus.ensureTopic(topic);
  const subscription = await rt.bus.subscribeInstance(topic, instance, handler);
  // Alive (its instance document) for an hour, holding one connection of the user.
  await rt.coordination.heartbeat({ owner: instance, ttlMs: 3_600_000, leaseKeys: [] });
  await rt.coordination.addPresence(userId, instance, instance);
  // As a hello does after its presence write: publishers' cached routes of the user are stale now.
  await listenFrom(rt.db, userId);
  return {
    async close() {
      await subscription.close();
      await rt.coordination.removePresence(userId, instance, instance);
      await rt.coordination.unmarkInstance(instance);
      await rt.bus.deleteTopic(topic);
    },
  };
}
