// The per-user webhook limit (20) under concurrent creates, on native PostgreSQL. An outside
// transaction holds the user row while two creates start; once both wait (polled), it commits.
// The creates count under the user row's lock, so the second counts the first's endpoint: one
// 201, one 422. Without the lock both counted 19 before either inserted (their inserts wait on
// the same row for its foreign key): two 201s and 21 endpoints.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';
import { lockWaits, outsideClient } from '../support/lock-waits';

const native = inject('database').kind === 'native';
if (!native) console.log('test/concurrency skipped: PGlite runs one transaction at a time, so nothing can interleave');

let api: ApiHarness;

beforeAll(async () => {
  if (!native) return;
  api = await startApi();
});
afterAll(() => api?.close());

const body = { url: 'http://localhost:9/hook', event_types: ['EntityChanged'] };

describe.skipIf(!native)('the webhook limit under concurrency', () => {
  it('should refuse the 21st webhook when two creates race at a user with 19', async () => {
    const token = await api.token('limit-racer');
    const userId = await api.userId(token);
    for (let i = 0; i < 19; i++) expect((await api.post(token, '/webhooks', body)).status).toBe(201);
    const outside = await outsideClient(api);
    try {
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM app_user WHERE id = $1 FOR UPDATE', [userId]);
      const creates = [api.post(token, '/webhooks', body), api.post(token, '/webhooks', body)];
      await lockWaits(api, 2);
      await outside.query('COMMIT');
      const answers = await Promise.all(creates);
      expect(answers.map((a) => a.status).sort()).toEqual([201, 422]);
      expect(answers.find((a) => a.status === 422)!.body.detail).toMatch(/at most 20/);
    } finally {
      await outside.end();
    }
    const { rows } = await api.rt.db.query<{ n: number }>(
      'test.count',
      'SELECT count(*)::int AS n FROM webhook WHERE user_id = $1',
      [userId],
    );
    expect(rows[0].n).toBe(20);
  });
});
