// Post-deploy operations on the Google Cloud APIs (cloudbuild.yaml's smoke step runs these):
//   npm run ops -- smoke --project P --region R --services api,sweep,live --public-url https://…
//     each Cloud Run service (the functions are Cloud Run services too) exists, its latest revision
//     is the ready one and serving; then /healthz, /readyz and the WebSocket route answer through
//     the public URL.
//   npm run ops -- sweep --project P --region R --job sweep
//     runs the Cloud Scheduler job now and waits until that run is reported successful.
// CLOUD_RUN_ENDPOINT / CLOUD_SCHEDULER_ENDPOINT (http://host:port) point the clients at local
// stand-ins of those APIs over their REST transport (the tests); unset, they use Google's.
import { parseArgs } from 'node:util';
import { ServicesClient } from '@google-cloud/run';
import { CloudSchedulerClient } from '@google-cloud/scheduler';
import { PassThroughClient } from 'google-auth-library';
import WebSocket from 'ws';

type Check = { name: string; ok: boolean; detail: string };
export interface OpsOptions {
  project: string;
  region: string;
  runEndpoint?: string;
  schedulerEndpoint?: string;
}

const clientOptions = (endpoint: string | undefined, project: string) => {
  if (!endpoint) return { projectId: project };
  const u = new URL(endpoint);
  return {
    projectId: project,
    apiEndpoint: u.hostname,
    port: Number(u.port),
    protocol: u.protocol.slice(0, -1),
    fallback: true,
    authClient: new PassThroughClient(),
  };
};

/** The deployed services: each exists, its newest revision is the ready one, its condition succeeded. */
export async function checkServices(opts: OpsOptions, services: string[]): Promise<Check[]> {
  const client = new ServicesClient(clientOptions(opts.runEndpoint, opts.project));
  try {
    return await Promise.all(
      services.map(async (s): Promise<Check> => {
        const name = `${s} service`;
        try {
          const [svc] = await client.getService({ name: client.servicePath(opts.project, opts.region, s) });
          const ready = svc.latestReadyRevision?.split('/').pop();
          const created = svc.latestCreatedRevision?.split('/').pop();
          if (svc.terminalCondition?.state !== 'CONDITION_SUCCEEDED') {
            return {
              name,
              ok: false,
              detail: `not ready: ${svc.terminalCondition?.state} ${svc.terminalCondition?.message ?? ''}`.trim(),
            };
          }
          if (!ready || ready !== created)
            return { name, ok: false, detail: `latest revision ${created} is not ready (serving ${ready ?? 'none'})` };
          return { name, ok: true, detail: `${svc.uri} revision ${ready}` };
        } catch (err) {
          return { name, ok: false, detail: (err as Error).message };
        }
      }),
    );
  } finally {
    await client.close();
  }
}

/** Through the public URL: liveness, readiness, and the WebSocket route reaching the live service. */
export async function checkPublicUrl(publicUrl: string): Promise<Check[]> {
  const get = async (path: string, init?: RequestInit) => {
    try {
      return await fetch(new URL(path, publicUrl), { ...init, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      return (err as Error).message;
    }
  };
  const checks: Check[] = [];
  for (const path of ['/healthz', '/readyz']) {
    const res = await get(path);
    const ok = typeof res !== 'string' && res.status === 200;
    checks.push({
      name: path,
      ok,
      detail: typeof res === 'string' ? res : `${res.status} ${await res.text()}`.slice(0, 200),
    });
  }
  // A WebSocket handshake without credentials: the live service completes it (a hello is then
  // awaited) or refuses it; the api function would answer 404. No answer or a 5xx is a failure.
  checks.push({ name: '/ws', ...(await webSocketReaches(new URL('/ws', publicUrl.replace(/^http/, 'ws')).href)) });
  return checks;
}

function webSocketReaches(url: string): Promise<{ ok: boolean; detail: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: 10_000 });
    const done = (ok: boolean, detail: string) => {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
      resolve({ ok, detail });
    };
    ws.once('open', () => done(true, 'upgraded (101)'));
    ws.once('unexpected-response', (_req, res) =>
      done(res.statusCode !== 404 && (res.statusCode ?? 500) < 500, `answered ${res.statusCode}`),
    );
    ws.once('error', (err) => done(false, err.message));
  });
}

/** Runs the scheduler job now and waits for that run's outcome (its lastAttemptTime moves past the start). */
export async function runSchedulerJob(
  opts: OpsOptions,
  job: string,
  timeoutMs = 180_000,
  pollMs = 2_000,
): Promise<Check> {
  const client = new CloudSchedulerClient(clientOptions(opts.schedulerEndpoint, opts.project));
  const name = client.jobPath(opts.project, opts.region, job);
  try {
    const [before] = await client.getJob({ name });
    const previous = Number(before.lastAttemptTime?.seconds ?? 0);
    await client.runJob({ name });
    const until = Date.now() + timeoutMs;
    for (;;) {
      const [now] = await client.getJob({ name });
      if (Number(now.lastAttemptTime?.seconds ?? 0) > previous || (previous === 0 && now.lastAttemptTime)) {
        const code = now.status?.code ?? 0;
        return {
          name: `job ${job}`,
          ok: code === 0,
          detail: code === 0 ? 'ran and succeeded' : `failed: code ${code} ${now.status?.message ?? ''}`.trim(),
        };
      }
      if (Date.now() > until)
        return { name: `job ${job}`, ok: false, detail: `no attempt reported within ${timeoutMs / 1000} s` };
      await new Promise((r) => setTimeout(r, pollMs));
    }
  } catch (err) {
    return { name: `job ${job}`, ok: false, detail: (err as Error).message };
  } finally {
    await client.close();
  }
}

function report(checks: Check[]): boolean {
  for (const c of checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  return checks.every((c) => c.ok);
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      project: { type: 'string', default: process.env.GOOGLE_CLOUD_PROJECT ?? process.env.PROJECT_ID },
      region: { type: 'string', default: process.env.REGION },
      services: { type: 'string' },
      'public-url': { type: 'string' },
      job: { type: 'string' },
      'timeout-seconds': { type: 'string', default: '180' },
    },
  });
  const [command] = positionals;
  if (!values.project || !values.region || (command !== 'smoke' && command !== 'sweep')) {
    console.error(
      'usage: npm run ops -- smoke|sweep --project P --region R [--services a,b --public-url URL] [--job NAME]',
    );
    return 2;
  }
  const opts: OpsOptions = {
    project: values.project,
    region: values.region,
    runEndpoint: process.env.CLOUD_RUN_ENDPOINT,
    schedulerEndpoint: process.env.CLOUD_SCHEDULER_ENDPOINT,
  };
  if (command === 'smoke') {
    if (!values.services || !values['public-url']) {
      console.error('smoke needs --services and --public-url');
      return 2;
    }
    const services = values.services
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return report([...(await checkServices(opts, services)), ...(await checkPublicUrl(values['public-url']))]) ? 0 : 1;
  }
  if (!values.job) {
    console.error('sweep needs --job');
    return 2;
  }
  return report([await runSchedulerJob(opts, values.job, Number(values['timeout-seconds']) * 1000)]) ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main(process.argv.slice(2));
