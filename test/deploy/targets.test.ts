// The deployable units, built as they ship (`npm run build` without the lock step), run locally
// against the emulators: the functions framework serving `api` and `sweep` from functions/dist
// (from that directory, with the telemetry preload in NODE_OPTIONS, as Terraform deploys them),
// and the live container's start command (the Dockerfile's CMD) on $PORT. Telemetry goes to a
// local OTLP receiver; the functions' exports carry the token of a local metadata server, as
// they carry the service account's on Cloud Functions (test/support/otlp.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { freePort } from '../../emulators/gcloud';
import { buildAll, FUNCTION_PRELOAD_ENV, PRELOAD } from '../../scripts/build';
import { fileDatabase, TEST_SECRETS } from '../harness';
import type { TestDatabase } from '../support/database';
import { until } from '../support/poll';
import {
  SPAN_KIND_CLIENT,
  SPAN_KIND_SERVER,
  startMetadataServer,
  startOtlpReceiver,
  type OtlpReceiver,
} from '../support/otlp';

const framework = path.resolve('node_modules/.bin/functions-framework');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

/** The live container's start command, from the Dockerfile (run from /app there, run-services/live here). */
function dockerCmd(): string[] {
  const line = readFileSync('run-services/live/Dockerfile', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('CMD '));
  return JSON.parse(line!.slice(4));
}

/** Polls `get` until it finds something; a timeout shows the process's output. */
const untilFound = <T>(what: string, get: () => T | undefined, output: () => string, timeoutMs = 30_000) =>
  until(what, get, { context: output, timeoutMs, intervalMs: 100 });

let pg: TestDatabase;
const children: ChildProcess[] = [];
let env: Record<string, string>;

beforeAll(async () => {
  await buildAll();
  pg = await fileDatabase();
  env = {
    ...(process.env as Record<string, string>),
    ...inject('emulatorEnv'),
    ...TEST_SECRETS,
    APP_ENV: 'test',
    DATABASE_URL: pg.url,
    STORAGE_BUCKET: 'deploy-test',
    LOG_LEVEL: 'warn',
  };
}, 120_000);
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(closers.map((c) => c()));
  await pg?.close();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  closers.push(r.close);
  return r;
}

async function run(cmd: string, args: string[], extra: Record<string, string>, cwd = '.') {
  const child = spawn(cmd, args, { env: { ...env, ...extra }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  return { child, output: () => output };
}

async function waitHealthy(url: string, proc: { child: ChildProcess; output(): string }) {
  const res = await until(
    `${url}/healthz to answer 200`,
    async () => {
      if (proc.child.exitCode !== null) return 'exited';
      const r = await fetch(`${url}/healthz`);
      return r.status === 200 ? r : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, context: proc.output },
  );
  if (res === 'exited') throw new Error(`exited ${proc.child.exitCode}: ${proc.output()}`);
  return res.json();
}

describe('deployable units', () => {
  it('should serve the api target from the function bundle', async () => {
    const port = await freePort();
    const proc = await run(
      'node',
      ['node_modules/.bin/functions-framework', '--target=api', '--source=functions/dist', `--port=${port}`],
      {},
    );
    const url = `http://127.0.0.1:${port}`;
    expect(await waitHealthy(url, proc)).toEqual({ status: 'ok' });
    const me = await fetch(`${url}/me`, {
      headers: { authorization: `Bearer ${await mintDevToken(TEST_SECRETS.IDENTITY_SECRET_KEY, 'fran')}` },
    });
    expect(me.status).toBe(200);
    expect((await me.json()).username).toBe('fran');
    const bad = await fetch(`${url}/meetings`, {
      method: 'POST',
      headers: { authorization: 'Bearer nope', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    // The docs page's asset ships beside the bundle; its package (a devDependency) does not.
    const docs = await fetch(`${url}/docs/assets/api-reference.js`);
    expect(docs.status).toBe(200);
    expect((await docs.text()).length).toBeGreaterThan(100_000);
    const shipped = JSON.parse(readFileSync('functions/dist/package.json', 'utf8')).dependencies;
    expect(Object.keys(shipped).filter((d) => /scalar|swagger|scarf/.test(d))).toEqual([]);
    expect(existsSync('functions/dist/docs-assets/api-reference.js')).toBe(true);
    // The framework parses bodies before our code runs (docs/deployment.md, "Known limits").
    const malformed = await fetch(`${url}/meetings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(malformed.status).toBe(400);
  });

  it('should serve the sweep target from the function bundle, a server span per pass continuing the caller trace', async () => {
    const otlp = await receiver();
    const port = await freePort();
    const proc = await run(
      'node',
      [framework, '--target=sweep', '--source=.', `--port=${port}`],
      { ...FUNCTION_PRELOAD_ENV, OTEL_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
      'functions/dist',
    );
    const url = `http://127.0.0.1:${port}/`;
    // The first POST that connects (the process may still be starting) runs the pass.
    const res = await until(
      'the sweep to answer',
      async () => {
        if (proc.child.exitCode !== null) return 'exited';
        return fetch(url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${TEST_SECRETS.SERVICE_AUTH_TOKEN}`,
            'content-type': 'application/json',
            traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`,
          },
          body: '{}',
        });
      },
      { timeoutMs: 60_000, intervalMs: 250, context: proc.output },
    );
    if (res === 'exited') throw new Error(proc.output());
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ passes: 1, finalized: 0 });
    const pass = await untilFound(
      'the span of the sweep pass',
      () => otlp.spans().find((s) => s.name === 'sweep pass'),
      proc.output,
    );
    expect(pass).toMatchObject({ kind: SPAN_KIND_SERVER, traceId: TRACE_ID, parentSpanId: PARENT_SPAN_ID });
    await untilFound(
      'a pg query span of the pass',
      () => otlp.spans().find((s) => s.traceId === TRACE_ID && s.kind === SPAN_KIND_CLIENT),
      proc.output,
    );
    expect(otlp.spans().filter((s) => s.kind === SPAN_KIND_SERVER)).toHaveLength(1);
    const anonymous = await fetch(url, { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });

  it('should trace and meter the api target as deployed: the app server span, auto-instrumented pg spans, Google credentials on every export', async () => {
    const otlp = await receiver();
    const metadata = await startMetadataServer();
    closers.push(metadata.close);
    const port = await freePort();
    const proc = await run(
      'node',
      [framework, '--target=api', '--source=.', `--port=${port}`],
      {
        ...FUNCTION_PRELOAD_ENV,
        OTEL_ENABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_AUTH: 'google',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=api,cloud.region=europe-west1',
        OTEL_METRIC_EXPORT_INTERVAL: '300',
        GCE_METADATA_HOST: metadata.host,
        GOOGLE_APPLICATION_CREDENTIALS: '',
      },
      'functions/dist',
    );
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url, proc);
    const me = await fetch(`${url}/me`, {
      headers: {
        authorization: `Bearer ${await mintDevToken(TEST_SECRETS.IDENTITY_SECRET_KEY, 'gail')}`,
        // Sampled, so that the request is recorded whatever OTEL_TRACES_SAMPLER_ARG says.
        traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`,
      },
    });
    expect(me.status).toBe(200);

    // The app's server span of the request (the http instrumentation makes none in a function:
    // OTEL_HTTP_SERVER_SPANS=app); pg: its queries, in the same trace. The trace given is continued.
    const server = await untilFound(
      'the server span of GET /me',
      () => otlp.spans().find((s) => s.kind === SPAN_KIND_SERVER && s.attributes['url.path'] === '/me'),
      proc.output,
    );
    expect(server).toMatchObject({
      name: 'GET /me',
      traceId: TRACE_ID,
      parentSpanId: PARENT_SPAN_ID,
      attributes: { 'http.request.method': 'GET', 'http.route': '/me', 'http.response.status_code': 200 },
    });
    expect(otlp.spans().filter((s) => s.kind === SPAN_KIND_SERVER)).toHaveLength(1);
    const query = await untilFound(
      'a pg query span of that request',
      () =>
        otlp
          .spans()
          .find(
            (s) =>
              s.traceId === server.traceId &&
              s.kind === SPAN_KIND_CLIENT &&
              (s.attributes['db.system'] ?? s.attributes['db.system.name']) === 'postgresql',
          ),
      proc.output,
    );
    expect(query.parentSpanId).toBeTruthy();
    expect(server.resource).toMatchObject({
      'service.name': 'api',
      'cloud.region': 'europe-west1',
      'gcp.project_id': env.GOOGLE_CLOUD_PROJECT ?? 'local-project',
    });
    // The metrics the REST middleware records leave the function (issue #17: they did not).
    await untilFound(
      'http.server.request.duration',
      () => otlp.metrics().find((m) => m.name === 'http.server.request.duration'),
      proc.output,
    );
    // Every export carries the metadata server's token (the service account's, on Cloud Functions).
    const exports = otlp.posts.filter((p) => p.path === '/v1/metrics' || p.path === '/v1/traces');
    expect(exports.length).toBeGreaterThan(1);
    expect(exports.every((p) => p.headers.authorization === `Bearer ${metadata.token}`)).toBe(true);
    expect(metadata.tokenRequests).toBeGreaterThanOrEqual(1);
  });

  it('should run the live container start command on $PORT and answer /healthz', async () => {
    const port = await freePort();
    // Two workers, as Terraform deploys it: the bundle must fork itself (node:cluster).
    const otlp = await receiver();
    const [cmd, ...args] = dockerCmd();
    expect(args).toEqual(['--import', `./dist/${PRELOAD}`, 'dist/server.js']);
    const proc = await run(
      cmd,
      args,
      {
        PORT: String(port),
        LIVE_WORKERS: '2',
        LOG_LEVEL: 'info',
        OTEL_ENABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      },
      'run-services/live',
    );
    expect(await waitHealthy(`http://127.0.0.1:${port}`, proc)).toMatchObject({ status: 'ok' });
    // The preload reached the workers (node:cluster forks with the primary's --import): a request's server span.
    expect((await fetch(`http://127.0.0.1:${port}/asyncapi.json`)).status).toBe(200);
    const span = await untilFound(
      'the server span of GET /asyncapi.json',
      () =>
        otlp.spans().find((s) => s.kind === SPAN_KIND_SERVER && Object.values(s.attributes).includes('/asyncapi.json')),
      proc.output,
    );
    expect(span.resource['service.name']).toBe('live');
    // Probes are not traced, nor background client calls (the workers' Pub/Sub and Firestore gRPC at start).
    expect(otlp.spans().filter((s) => Object.values(s.attributes).includes('/healthz'))).toEqual([]);
    expect(otlp.spans().filter((s) => s.kind === SPAN_KIND_CLIENT && !s.parentSpanId)).toEqual([]);
    // /healthz answers once one worker listens; the drain is checked with both up.
    await until(
      'the second worker to start',
      () => (proc.output().match(/"message":"live service listening"/g)?.length ?? 0) >= 2,
      { timeoutMs: 30_000, intervalMs: 100, context: proc.output },
    );
    proc.child.kill('SIGTERM');
    const code = await new Promise((r) => proc.child.once('exit', r));
    expect(code).toBe(0);
    expect(proc.output().match(/"message":"live service listening"/g)).toHaveLength(2);
  });
});
