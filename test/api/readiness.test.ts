// GET /readyz (decisions.md section 7): 200 while the database answers, 503 problem+json with
// Retry-After while it cannot answer within 1 s (a server that accepts and never speaks, one
// that refuses connections); /healthz stays a liveness check and answers 200 throughout.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let silent: Server;
const sockets = new Set<Socket>();
let silentUrl: string;

beforeAll(async () => {
  api = await startApi();
  // Accepts connections and never answers: a database that hangs.
  silent = createServer((s) => (sockets.add(s), s.on('error', () => undefined)));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentUrl = `postgres://u:p@127.0.0.1:${(silent.address() as AddressInfo).port}/db`;
});
afterAll(async () => {
  await api?.close();
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent?.close(r));
});

describe('GET /readyz', () => {
  it('should answer 200 while the database answers', async () => {
    const res = await api.request('GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it.each([
    ['hangs', () => silentUrl],
    ['refuses connections', () => 'postgres://u:p@127.0.0.1:9/db'],
  ])(
    'should answer 503 problem+json with Retry-After while the database %s; /healthz stays 200',
    async (_what, url) => {
      const down = await startApi({}, { database: { url: url(), close: async () => {} } });
      try {
        const res = await down.request('GET', '/readyz');
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(res.body).toMatchObject({ status: 503, type: expect.stringMatching(/\/unavailable$/) });
        expect((await down.request('GET', '/healthz')).status).toBe(200);
      } finally {
        await down.close();
      }
    },
  );
});
