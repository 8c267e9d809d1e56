// Webhooks under concurrency, on native PostgreSQL. The per-user limit (20): an outside
// transaction holds the user row while two creates start; once both wait (polled), it commits.
// The creates count under the user row's lock, so the second counts the first's endpoint: one
// 201, one 422. Without the lock both counted 19 before either inserted (their inserts wait on
// the same row for its foreign key): two 201s and 21 endpoints. The dispatcher: a fan-out pass
// or a claim racing another dispatcher that holds the endpoint row (the outside transaction).
import { describe, expect, it } from 'vitest';
import { claimDue, fanOut } from '@mi/lib/webhooks/dispatcher';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaiters, lockWaits, outsideClient } from '../support/lock-waits';

let api: ApiHarness;

withNativeApi((started) => {
  api = started;
});

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

describe.skipIf(!native)('the webhook dispatcher under concurrency', () => {
  /** An endpoint of a new user with `events` events queued past its cursor; its id, user id and token. */
  async function endpointWithEvents(name: string, events: number) {
    const token = await api.token(name);
    const userId = await api.userId(token);
    const hook = await api.post(token, '/webhooks', body);
    expect(hook.status).toBe(201);
    for (let i = 0; i < events; i++) await api.meeting(token, 'text');
    return { id: hook.body.id as string, userId, token };
  }
  const one = async (text: string, id: string) =>
    (await api.rt.db.query<{ v: string }>('test.one', text, [id])).rows[0].v;
  const cursor = (id: string) => one('SELECT cursor_seq::text AS v FROM webhook WHERE id = $1', id);
  const lastSeq = (userId: string) => one('SELECT max(seq)::text AS v FROM event_outbox WHERE user_id = $1', userId);
  /** Resolves once the call is answered or waits for a lock (an unguarded one waits). */
  const answeredOrWaiting = async (call: Promise<unknown>) => {
    let answered = false;
    void call.finally(() => (answered = true)).catch(() => undefined);
    await expect.poll(async () => answered || (await lockWaiters(api)) > 0, { timeout: 20_000 }).toBe(true);
  };

  it('should never move a cursor back when a fan-out pass races another pass of the same endpoint', async () => {
    const hook = await endpointWithEvents('fan-out-racer', 3);
    const outside = await outsideClient(api);
    try {
      await outside.query('BEGIN'); // the other pass holds the endpoint
      await outside.query('SELECT 1 FROM webhook WHERE id = $1 FOR UPDATE', [hook.id]);
      const pass = fanOut(api.rt.db);
      await answeredOrWaiting(pass);
      // A fourth event commits; the other pass queues all four and moves the cursor past them.
      await api.meeting(hook.token, 'text');
      await outside.query('UPDATE webhook SET cursor_seq = $2 WHERE id = $1', [hook.id, await lastSeq(hook.userId)]);
      await outside.query('COMMIT');
      await pass;
    } finally {
      await outside.end();
    }
    expect(await cursor(hook.id)).toBe(await lastSeq(hook.userId));
  });

  it('should not lease an endpoint that another dispatcher leased while the claim looked at it', async () => {
    const hook = await endpointWithEvents('claim-racer', 1);
    while ((await fanOut(api.rt.db)) > 0); // its delivery is due
    const outside = await outsideClient(api);
    let claims: Awaited<ReturnType<typeof claimDue>>;
    try {
      await outside.query('BEGIN'); // the other dispatcher's claim
      await outside.query(`UPDATE webhook SET lease_until = now() + interval '60 seconds' WHERE id = $1`, [hook.id]);
      const claim = claimDue(api.rt.db, 100);
      await answeredOrWaiting(claim);
      await outside.query('COMMIT');
      claims = await claim;
    } finally {
      await outside.end();
    }
    expect(claims.filter((c) => c.webhook_id === hook.id)).toEqual([]);
  });
});
