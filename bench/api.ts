// `npm run bench:api`: what a request costs the deployable. The built api bundle (`npm run build`,
// functions/dist) is served by the functions framework as deployed, pinned to one core with
// taskset; autocannon loads it from its own process on the other core (bench/api-load.ts). The
// figure is the server's CPU per request (/proc/<pid>/stat), with and without the telemetry
// preload, against a bare Hono app's /healthz under the same framework, Node and pinning
// (bench/bare-api), measured in the same run. The stack around it (native PostgreSQL + pgvector
// when installed, the emulators) comes from the local stack, on the load generator's core.
// BENCH_API_ROUTES (a comma list of rows) and BENCH_API_PROFILE=<dir> (CPU profiles): see below.
// With the POST row, the event latency to another instance's tab: POST /meetings, one at a time,
// on the api bundle (preload) to the `meeting created` event on a tab of the stack's live service.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { freePort } from '../emulators/gcloud';
import { startLocalStack } from '../emulators/stack';
import { buildAll, FUNCTION_PRELOAD_ENV } from '../scripts/build';
import { createTestDatabase, runtimeUrl, startTestEngine } from '../test/support/database';
import type { LoadResult, LoadSpec } from './api-load';
import { serverNode } from './live-processes';
import WebSocket from 'ws';
import { percentile, table, writeSection, type Row } from './report';

const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 15);
const CONNECTIONS = 32;
// Cloud Run functions bill as Cloud Run (CPU allocated during requests only, Tier 1 regions): the list
// prices of cloud.google.com/run/pricing, read 2026-11-26. A deployed api instance has 1 vCPU and
// 512 MiB (infra/modules/services/functions.tf).
const PRICE = { vcpuSecond: 0.000024, gibSecond: 0.0000025, perMillionRequests: 0.4, memoryGib: 0.5 };
const SERVER_CORE = '1';
// Development aids: BENCH_API_ROUTES=meetings,healthz measures the routes whose names contain one
// of the words; BENCH_API_PROFILE=<dir> writes each server's CPU profile there (node --cpu-prof).
const ONLY = process.env.BENCH_API_ROUTES?.split(',');
const PROFILE_DIR = process.env.BENCH_API_PROFILE && path.resolve(process.env.BENCH_API_PROFILE);
const LOAD_CORE = '0';
// BENCH_API_COMPARE=<dir>: another api bundle (e.g. one built from a commit without the row
// policies) served as the schema owner, measured with the preload beside this one's rows and
// printed, not written: the cost of a change in one run (issue 38's figures).
// BENCH_API_COMPARE_LOGIN=api serves it as the api login instead, as this one (a bundle of main).
const COMPARE_DIR = process.env.BENCH_API_COMPARE && path.resolve(process.env.BENCH_API_COMPARE);
// BENCH_API_ROUNDS (default 5): rounds of a comparison, the two bundles alternating in each; the
// change printed is the median of the rounds' paired changes, with their range (a loaded
// machine moves one row ±30 % between runs, and a pair measured back to back much less).
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 5);
const COMPARE_AS_API = process.env.BENCH_API_COMPARE_LOGIN === 'api';
// The functions run on the nodejs24 runtime (infra/modules/services/functions.tf): the servers do too.
const NODE = serverNode();
const NODE_VERSION = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();

const root = path.resolve(import.meta.dirname, '..');
const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-bench-api-'));
// Everything but the server (this process's children: the database, the emulators, the stack)
// on the load generator's core: the server's core is its own, and the database's work (the row
// policies') is not charged to it through a shared core.
spawnSync('taskset', ['-a', '-cp', LOAD_CORE, String(process.pid)]);
const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const stack = await startLocalStack({
  ...process.env,
  APP_ENV: 'development',
  DATA_DIR: dataDir,
  CORE_PORT: '0',
  ML_PORT: '0',
  LOG_LEVEL: 'error',
  DATABASE_URL: database.url,
  // Nothing of the stack's own should run during the measurement.
  RECORDING_GAP_SWEEP_INTERVAL_SECONDS: '3600',
});
const { config } = stack;
const token = await mintDevToken(config.IDENTITY_SECRET_KEY!, 'bench');
const user = `Bearer ${token}`;
const service = `Bearer ${config.SERVICE_AUTH_TOKEN}`;

/** Where the function's telemetry goes: a sink that answers every export (the collector's place). */
const otlp = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
await new Promise<void>((r) => otlp.listen(0, '127.0.0.1', r));

async function call(method: string, p: string, auth: string, body?: unknown) {
  const send = () =>
    fetch(stack.url + p, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  // A kept-alive connection the server just closed resets; the same key makes the retry safe.
  const key = randomUUID();
  const res = await send().catch(send);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

// The data: 1,000 meetings of the user (a full first page), one with a transcription of 20,000
// segments (a 4 h take, the PUT's bound; one in ten with a feature vector, as the batch worker
// sends them) to search.
const me = await call('GET', '/me', user);
await stack.rt.db.query(
  'bench.meetings',
  `INSERT INTO meeting (user_id, title, source_type, start_time)
   SELECT $1, 'm' || n, 'text', now() - n * interval '1 minute' FROM generate_series(1, 1000) n`,
  [me.id],
);
const meeting = await call('POST', '/meetings', user, { title: 'bench', source_type: 'text' });
const transcription = await call('POST', `/meetings/${meeting.id}/transcriptions`, service, {});
const unit = (v: number[]) => v.map((x) => x / Math.hypot(...v));
const segments = JSON.stringify({
  segments: Array.from({ length: 20_000 }, (_, i) => ({
    speaker_label: `SPEAKER_${i % 4}`,
    text: `segment number ${i} with some words in it`,
    start_ms: i * 1000,
    end_ms: i * 1000 + 900,
    confidence: 0.9,
    feature_vector: i % 10 === 0 ? unit(Array.from({ length: 192 }, () => Math.random() * 2 - 1)) : null,
  })),
});
await call('PUT', `/transcriptions/${transcription.id}/segments`, service, JSON.parse(segments));

await buildAll();

interface Route {
  name: string;
  method: LoadSpec['method'];
  path: string;
  auth?: string;
  body?: string;
  freshIdempotencyKey?: boolean;
  /** Replacing 20,000 segments is serialized per transcription: one client. */
  connections?: number;
}
const json = { 'content-type': 'application/json' };
const healthz: Route = { name: 'GET /healthz', method: 'GET', path: '/healthz' };
const routes: Route[] = [
  healthz,
  { name: 'GET /meetings (50 of 1,000)', method: 'GET', path: '/meetings?limit=50', auth: user },
  { name: 'GET /meetings/{id}', method: 'GET', path: `/meetings/${meeting.id}`, auth: user },
  {
    name: 'POST /meetings (Idempotency-Key)',
    method: 'POST',
    path: '/meetings',
    auth: user,
    body: JSON.stringify({ title: 'bench create', source_type: 'text' }),
    freshIdempotencyKey: true,
  },
  { name: 'GET /search (20,000 segments)', method: 'GET', path: '/search?q=segment%2042', auth: user },
  {
    name: 'PUT 20,000 segments',
    method: 'PUT',
    path: `/transcriptions/${transcription.id}/segments`,
    auth: service,
    body: segments,
    connections: 1,
  },
];
const selected = routes.filter((r) => !ONLY || ONLY.some((w) => r.name.toLowerCase().includes(w)));

/** utime + stime of a process (every thread), ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ is 100
}

interface Server {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

/** As deployed, the function connects as its own login (mi_api): the row policies bind it. */
const apiUrl = runtimeUrl(engine.engine, database.url, 'api');

/** The functions framework serving `api` from a directory, pinned to the server's core. */
async function startServer(source: string, preload: boolean, databaseUrl = apiUrl): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'taskset',
    [
      '-c',
      SERVER_CORE,
      NODE,
      ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
      path.join(root, 'node_modules/.bin/functions-framework'),
      '--target=api',
      '--source=.',
      `--port=${port}`,
    ],
    {
      cwd: source,
      env: {
        ...process.env,
        ...stackEnv(),
        DATABASE_URL: databaseUrl,
        // As deployed: the preload through NODE_OPTIONS, logs at info on stdout, telemetry exported.
        ...(preload ? FUNCTION_PRELOAD_ENV : { NODE_OPTIONS: '' }),
        LOG_LEVEL: 'info',
        OTEL_ENABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(otlp.address() as AddressInfo).port}`,
        OTEL_METRIC_EXPORT_INTERVAL: '60000',
        // Terraform's trace_sample_ratio: one trace in ten the function starts is recorded.
        OTEL_TRACES_SAMPLER_ARG: '0.1',
        DB_POOL_MAX: '10',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  for (const end = Date.now() + 60_000; ; ) {
    if (child.exitCode !== null) throw new Error(`the server exited ${child.exitCode}: ${stderr}`);
    if ((await fetch(`${url}/healthz`).catch(() => null))?.status === 200) break;
    if (Date.now() > end) throw new Error(`the server did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const exited = new Promise((r) => child.once('exit', r));
  // SIGTERM: the framework shuts down and exits, which writes the profile.
  return { url, pid: child.pid!, stop: () => (child.kill('SIGTERM'), exited) };
}

function stackEnv(): Record<string, string> {
  const keys = [
    'DATABASE_URL',
    'PUBSUB_EMULATOR_HOST',
    'FIRESTORE_EMULATOR_HOST',
    'STORAGE_EMULATOR_HOST',
    'STORAGE_SIGNER_KEY_FILE',
    'STORAGE_BUCKET',
    'IDENTITY_SECRET_KEY',
    'SERVICE_AUTH_TOKEN',
    'AUDIO_URL_SIGNING_KEY',
    'GOOGLE_CLOUD_PROJECT',
  ] as const;
  const vars = Object.fromEntries(keys.map((k) => [k, String(config[k] ?? '')]));
  return { ...vars, APP_ENV: 'development', DATABASE_URL: database.url, DATA_DIR: dataDir };
}

/** One load run of a route from the load generator's own process, pinned to the other core. */
function load(server: Server, route: Route, seconds: number): LoadResult {
  const spec: LoadSpec = {
    url: server.url,
    method: route.method,
    path: route.path,
    headers: { ...(route.auth ? { authorization: route.auth } : {}), ...(route.body ? json : {}) },
    body: route.body,
    connections: route.connections ?? CONNECTIONS,
    seconds,
    freshIdempotencyKey: route.freshIdempotencyKey,
  };
  const out = execFileSync(
    'taskset',
    ['-c', LOAD_CORE, process.execPath, '--import', 'tsx', path.join(import.meta.dirname, 'api-load.ts')],
    { input: JSON.stringify(spec), maxBuffer: 1 << 20, cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const result: LoadResult = JSON.parse(out.toString());
  if (result.non2xx || result.errors) throw new Error(`${route.name}: ${JSON.stringify(result)}`);
  return result;
}

interface Measure {
  cpuUs: number;
  /** Wall time of the slowest 1 % (the PUT's target is a wall bound). */
  p99: number;
}

async function measure(server: Server, route: Route): Promise<Measure> {
  load(server, route, Math.min(3, SECONDS)); // warm-up: JIT, pool connections, prepared plans
  const before = cpuMs(server.pid);
  const r = load(server, route, SECONDS);
  const cpu = cpuMs(server.pid) - before;
  return { cpuUs: (cpu * 1000) / r.requests, p99: r.p99 };
}

const TAB_SAMPLES = 200;
/** Sent first and not counted: the stack's live service warms up on whichever bundle goes first. */
const TAB_WARM_UP = 20;

/**
 * Event latency to another instance's tab: from sending POST /meetings to the function until its
 * `meeting created` event reaches a tab of the user on the stack's live service (its own instance:
 * presence in Firestore, its own Pub/Sub topic), one request at a time; ms.
 */
async function tabLatency(server: Server): Promise<number[]> {
  const ws = new WebSocket(`${stack.url.replace('http', 'ws')}/ws`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const arrived = new Map<string, () => void>();
  const seen = new Map<string, number>();
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { type: string; entity?: string; action?: string; id?: string };
    if (m.type === 'ready') ready();
    if (m.type !== 'EntityChanged' || m.entity !== 'meeting' || m.action !== 'created' || !m.id) return;
    seen.set(m.id, performance.now());
    arrived.get(m.id)?.();
  });
  ws.send(JSON.stringify({ type: 'hello', token, client_id: randomUUID() }));
  await isReady;
  const samples: number[] = [];
  try {
    for (let i = -TAB_WARM_UP; i < TAB_SAMPLES; i++) {
      const sent = performance.now();
      const res = await fetch(`${server.url}/meetings`, {
        method: 'POST',
        headers: { authorization: user, ...json, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ title: 'bench tab', source_type: 'text' }),
      });
      const { id } = (await res.json()) as { id: string };
      if (res.status !== 201) throw new Error(`POST /meetings → ${res.status}`);
      if (!seen.has(id)) await new Promise<void>((r) => arrived.set(id, r));
      if (i >= 0) samples.push(seen.get(id)! - sent);
    }
  } finally {
    ws.close();
  }
  return samples;
}

// All three servers run at once (idle but for the one under load), and each route is measured on
// both variants back to back: the shared machine's load drifts, and should weigh on both alike.
// The baseline is measured first and last; the lower (less disturbed) figure is kept.
const bare = await startServer(path.join(root, 'bench/bare-api'), false);
const preloaded = await startServer(path.join(root, 'functions/dist'), true);
const plainServer = await startServer(path.join(root, 'functions/dist'), false);
const compared = COMPARE_DIR ? await startServer(COMPARE_DIR, true, COMPARE_AS_API ? apiUrl : database.url) : null;
const measured: Record<'preload' | 'plain', Measure[]> = { preload: [], plain: [] };
/** Per route, each round's [compared, this tree] CPU per request. */
const pairs: [number, number][][] = [];
let baseline: Measure;
let tab: number[] = [];
let tabCompared: number[] = [];
try {
  const first = await measure(bare, healthz);
  for (const route of selected) {
    measured.preload.push(await measure(preloaded, route));
    measured.plain.push(await measure(plainServer, route));
  }
  for (const route of compared ? selected : []) {
    const rounds: [number, number][] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which goes first: a drift in the machine's load weighs on both alike.
      const cpu = new Map<Server, number>();
      for (const server of r % 2 ? [compared!, preloaded] : [preloaded, compared!])
        cpu.set(server, (await measure(server, route)).cpuUs);
      rounds.push([cpu.get(compared!)!, cpu.get(preloaded)!]);
    }
    pairs.push(rounds);
  }
  const last = await measure(bare, healthz);
  baseline = first.cpuUs <= last.cpuUs ? first : last;
  if (selected.some((r) => r.method === 'POST')) {
    tab = await tabLatency(preloaded);
    if (compared) tabCompared = await tabLatency(compared);
  }
} finally {
  await Promise.all([bare.stop(), preloaded.stop(), plainServer.stop(), compared?.stop()]);
}

const us = (v: number) => `${Math.round(v).toLocaleString('en')} µs`;
const perSecond = (v: number) => Math.round(v).toLocaleString('en');
/** A deployed instance billed while it serves at full CPU: one vCPU-second per CPU-second used. */
const costPerMillion = (cpuUs: number) => {
  const seconds = cpuUs; // µs per request × 1,000,000 requests
  return seconds * (PRICE.vcpuSecond + PRICE.memoryGib * PRICE.gibSecond) + PRICE.perMillionRequests;
};
const rows: Row[] = [
  {
    request: 'bare Hono GET /healthz (baseline)',
    'CPU/req, preload': '',
    'CPU/req, no preload': us(baseline.cpuUs),
    'ratio to baseline (preload)': '1.00',
    'preload share': '',
    'p99 (preload)': '',
    'req/s per vCPU (preload)': perSecond(1e6 / baseline.cpuUs),
    '$ per 1M (preload)': costPerMillion(baseline.cpuUs).toFixed(2),
  },
  ...selected.map((route, i) => {
    const [preload, plain] = [measured.preload[i], measured.plain[i]];
    return {
      request: route.name,
      'CPU/req, preload': us(preload.cpuUs),
      'CPU/req, no preload': us(plain.cpuUs),
      'ratio to baseline (preload)': (preload.cpuUs / baseline.cpuUs).toFixed(2),
      'preload share': `${Math.round((1 - plain.cpuUs / preload.cpuUs) * 100)} %`,
      'p99 (preload)': `${preload.p99} ms`,
      'req/s per vCPU (preload)': perSecond(1e6 / preload.cpuUs),
      '$ per 1M (preload)': costPerMillion(preload.cpuUs).toFixed(2),
    };
  }),
];

const out = `Engine: ${engine.engine.label}. The api bundle (Node ${NODE_VERSION}) pinned to core ${SERVER_CORE}, \
${CONNECTIONS} connections (PUT: 1), ${SECONDS} s per row, every answer 2xx, logs and telemetry as deployed. Method: bench/api.ts.

${table(rows)}

Ratio: CPU/req over the bare Hono /healthz's. Preload share: the telemetry preload's part. Req/s per vCPU: 1 s / CPU \
per request. $ per 1M: that CPU at Cloud Run's list prices (Tier 1, read 2026-11-26) plus the request fee.\
${tab.length ? `\n\nEvent latency to another instance's tab (POST /meetings sent → its event on a tab of the stack's live service, ${tab.length} one at a time): p50 ${percentile(tab, 50).toFixed(1)} ms, p99 ${percentile(tab, 99).toFixed(1)} ms.` : ''}`;
console.log(out);
if (compared) {
  const pct = (v: number) => `${v >= 0 ? '+' : ''}${Math.round(v)} %`;
  const lines = selected.map((route, i) => {
    const changes = pairs[i].map(([a, b]) => (b / a - 1) * 100);
    const [a, b] = [
      percentile(
        pairs[i].map((p) => p[0]),
        50,
      ),
      percentile(
        pairs[i].map((p) => p[1]),
        50,
      ),
    ];
    return `| ${route.name} | ${us(a)} | ${us(b)} | ${pct(percentile(changes, 50))} | ${pct(Math.min(...changes))} … ${pct(Math.max(...changes))} |`;
  });
  console.log(
    `\n${ROUNDS} rounds, medians:\n\n| request | CPU/req, ${COMPARE_DIR} | CPU/req, this tree | change | rounds' changes |\n| --- | --- | --- | --- | --- |\n${lines.join('\n')}`,
  );
  if (tabCompared.length)
    console.log(
      `\nEvent latency to another instance's tab, ${COMPARE_DIR}: p50 ${percentile(tabCompared, 50).toFixed(1)} ms, p99 ${percentile(tabCompared, 99).toFixed(1)} ms.`,
    );
}
// A partial or profiled run is not the section's figures.
if (!ONLY && !PROFILE_DIR) writeSection('API', out);
otlp.close();
await stack.stop();
await database.close();
await engine.stop();
rmSync(dataDir, { recursive: true, force: true });
