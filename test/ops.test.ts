// The operations script (scripts/ops.ts) against local stand-ins of Cloud Run Admin and Cloud
// Scheduler (test/support/google-apis.ts), the public URL being a real core instance (REST and
// the live service on one server, as the load balancer joins them) and the job's target the real
// sweep handler.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepHandler } from '../functions/sweep';
import { checkPublicUrl, checkServices, runSchedulerJob, type OpsOptions } from '../scripts/ops';
import { startGoogleApis, type StandInJob } from './support/google-apis';
import { useInstance } from './live/helpers';

const ctx = useInstance();
let apis: Awaited<ReturnType<typeof startGoogleApis>>;
let opts: OpsOptions;
const jobs: Record<string, StandInJob> = {};

/** The sweep through its HTTP handler, with the token the scheduler's OIDC stands for locally. */
async function callSweep(): Promise<number> {
  let status = 0;
  const res = { status: (code: number) => ((status = code), res), json: () => undefined };
  await sweepHandler(ctx.instance.rt)(
    { headers: { authorization: `Bearer ${ctx.instance.config.SERVICE_AUTH_TOKEN}` }, body: {} },
    res,
  );
  return status;
}

beforeAll(async () => {
  jobs.sweep = { target: callSweep };
  jobs.broken = { target: async () => 500 };
  const ready = (n: string) => ({
    uri: `https://${n}.run.app`,
    latestReadyRevision: `${n}-00002`,
    latestCreatedRevision: `${n}-00002`,
    ready: true,
  });
  apis = await startGoogleApis({
    project: 'ops-project',
    region: 'europe-west1',
    services: {
      api: ready('api'),
      live: ready('live'),
      // A deploy whose new revision never became ready: the old one still serves.
      stuck: {
        uri: 'https://stuck.run.app',
        latestReadyRevision: 'stuck-00001',
        latestCreatedRevision: 'stuck-00002',
        ready: true,
      },
      failed: { ...ready('failed'), ready: false },
    },
    jobs,
  });
  opts = { project: 'ops-project', region: 'europe-west1', runEndpoint: apis.url, schedulerEndpoint: apis.url };
});
afterAll(() => apis?.close());

describe('ops smoke', () => {
  it('should find each service with its URL and its latest revision ready', async () => {
    const checks = await checkServices(opts, ['api', 'live']);
    expect(checks).toEqual([
      { name: 'api service', ok: true, detail: 'https://api.run.app revision api-00002' },
      { name: 'live service', ok: true, detail: 'https://live.run.app revision live-00002' },
    ]);
  });

  it('should fail a service whose newest revision is not ready, whose condition failed, or that does not exist', async () => {
    const [stuck, failed, missing] = await checkServices(opts, ['stuck', 'failed', 'nope']);
    expect(stuck).toMatchObject({
      ok: false,
      detail: 'latest revision stuck-00002 is not ready (serving stuck-00001)',
    });
    expect(failed).toMatchObject({ ok: false, detail: expect.stringContaining('CONDITION_FAILED') });
    expect(missing).toMatchObject({ ok: false, detail: expect.stringContaining('not found') });
  });

  it('should check liveness, readiness and the WebSocket route through the public URL', async () => {
    const checks = await checkPublicUrl(ctx.instance.url);
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ['/healthz', true],
      ['/readyz', true],
      ['/ws', true],
    ]);
    // Nothing listening: every check fails, none hangs.
    const down = await checkPublicUrl('http://127.0.0.1:9');
    expect(down.every((c) => !c.ok)).toBe(true);
  });

  it('should exit 0 from the command line when all is well and 1 when a check fails', async () => {
    // Not spawnSync: the stand-in answers from this process.
    const run = (services: string) =>
      promisify(execFile)(
        'npx',
        [
          'tsx',
          'scripts/ops.ts',
          'smoke',
          '--project',
          'ops-project',
          '--region',
          'europe-west1',
          '--services',
          services,
          '--public-url',
          ctx.instance.url,
        ],
        {
          env: { ...process.env, CLOUD_RUN_ENDPOINT: apis.url },
        },
      ).then(
        (r) => ({ status: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ status: e.code, stdout: e.stdout }),
      );
    const good = await run('api,live');
    expect(good.stdout).toContain('ok   /readyz');
    expect(good.status).toBe(0);
    const bad = await run('api,stuck');
    expect(bad.stdout).toContain('FAIL stuck service');
    expect(bad.status).toBe(1);
  });
});

describe('ops sweep', () => {
  it('should run the scheduler job now and see the sweep succeed', async () => {
    const check = await runSchedulerJob(opts, 'sweep', 60_000, 100);
    expect(check).toEqual({ name: 'job sweep', ok: true, detail: 'ran and succeeded' });
    expect(jobs.sweep.lastAttemptTime).toBeDefined();
    // A second run is told apart from the first by its attempt time.
    expect(await runSchedulerJob(opts, 'sweep', 60_000, 100)).toMatchObject({ ok: true });
  });

  it('should report a job whose target fails, and an unknown job', async () => {
    expect(await runSchedulerJob(opts, 'broken', 60_000, 100)).toEqual({
      name: 'job broken',
      ok: false,
      detail: 'failed: code 13 HTTP 500',
    });
    expect(await runSchedulerJob(opts, 'nope', 60_000, 100)).toMatchObject({
      ok: false,
      detail: expect.stringContaining('not found'),
    });
  });
});
