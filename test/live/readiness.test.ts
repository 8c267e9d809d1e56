// The live service's GET /readyz (docs/deployment.md: Cloud Run's startup probe), on server.ts as
// a real process whose database sits behind a TCP proxy: 200 while it accepts connections and its
// database answers; 503 problem+json with Retry-After while the database hangs (then 200 again
// once it answers) and while the instance drains on SIGTERM. /healthz (liveness) ignores the
// database. Every outcome is polled for, never waited out.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { TestClient, createMeeting, range, token, useInstances, type Instance } from './helpers';

const live = useInstances(1);
let other: Instance;
let proxy: TcpProxy;

beforeAll(async () => {
  [other] = live.instances;
  proxy = await startTcpProxy(live.database.url);
});
afterEach(() => {
  proxy.forward();
});
afterAll(async () => {
  await proxy?.close();
});

const get = async (url: string) => {
  const res = await fetch(url);
  const [type, retryAfter] = [res.headers.get('content-type'), res.headers.get('retry-after')];
  return { status: res.status, type, retryAfter, body: await res.json() };
};
const poll = { timeout: 30_000, interval: 100 };

describe('live GET /readyz', () => {
  it('should be ready while the database answers, 503 while it hangs (healthz 200), ready again after', async () => {
    const server = await live.startServer({ DATABASE_URL: proxy.url });
    expect(await get(`${server.url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ok' } });

    proxy.hang();
    await expect.poll(async () => (await get(`${server.url}/readyz`)).status, poll).toBe(503);
    const down = await get(`${server.url}/readyz`);
    expect(down.type).toContain('application/problem+json');
    expect(down.retryAfter).toMatch(/^\d+$/);
    expect(down.body).toMatchObject({ status: 503, detail: expect.stringMatching(/database does not answer/) });
    expect((await get(`${server.url}/healthz`)).status).toBe(200);

    proxy.forward();
    await expect.poll(async () => (await get(`${server.url}/readyz`)).status, poll).toBe(200);
  });

  it('should answer 503 while the instance drains after SIGTERM', async () => {
    const server = await live.startServer({ DATABASE_URL: proxy.url, RECORDING_SEGMENT_TARGET_MS: '10000' });
    const t = await token(other.config, 'draining');
    const client = await TestClient.connect(server.wsUrl, t);
    const meetingId = await createMeeting(other, t);
    await client.start(meetingId);
    for (const seq of range(0, 4)) client.frame(seq); // in memory: the drain has them to write
    // The drain's writes hang with the database, so it lasts (up to its 8 s deadline) while we ask.
    proxy.hang();
    server.process.kill('SIGTERM');
    await expect
      .poll(async () => (await get(`${server.url}/readyz`)).body.detail, poll)
      .toBe('not accepting connections');
    const draining = await get(`${server.url}/readyz`);
    expect(draining).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
    expect((await get(`${server.url}/healthz`)).status).toBe(503);
    client.close();
  });
});
