// Webhook delivery end to end on the production engine: events written through the REST API,
// the dispatcher (lib/webhooks/dispatcher.ts) running against the same database, and real
// receivers that verify every signature with the standardwebhooks package. The retry schedule
// is shortened through its configuration; nothing here waits real minutes.
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { appendEvent } from '@mi/lib/events/outbox';
import { pruneExpired } from '@mi/lib/repositories/retention';
import { progressEvent, talkingPointEvent } from '@mi/lib/events/catalogue';
import { claimDue, startDispatcher, type Dispatcher, type DispatcherOptions } from '@mi/lib/webhooks/dispatcher';
import { startApi, type ApiHarness } from '../harness';
import { until } from '../support/poll';
import { Receiver } from './receiver';

let api: ApiHarness;
const dispatchers: Dispatcher[] = [];
const receivers: Receiver[] = [];

// Deliveries cross a dispatcher's poll and a receiver: a longer bound than the default on a loaded machine.
const POLL = { timeoutMs: 30_000, intervalMs: 20 };

function dispatch(over: Partial<DispatcherOptions> = {}): Dispatcher {
  const d = startDispatcher({
    db: api.rt.db,
    log: api.rt.log,
    env: 'test',
    pollMs: 50,
    retrySchedule: [0.1, 0.2, 0.3],
    disableAfterSeconds: 3600,
    timeoutMs: 2000,
    ...over,
  });
  dispatchers.push(d);
  return d;
}

/** A user with a webhook to a new receiver; returns the token, user id, webhook and receiver. */
async function subscriber(eventTypes: string[] = ['*'], endpoints = 1) {
  const token = await api.token(`u-${randomUUID().slice(0, 8)}`);
  const userId = await api.userId(token);
  let secret = '';
  const receiver = await new Receiver(() => secret).start();
  receivers.push(receiver);
  let webhookId = '';
  for (let i = 0; i < endpoints; i++) {
    const created = await api.post(token, '/webhooks', { url: receiver.url, event_types: eventTypes });
    expect(created.status).toBe(201);
    secret = created.body.secret;
    webhookId = created.body.id;
  }
  return { token, userId, webhookId, receiver };
}

const tag = (token: string) => api.post(token, '/tags', { name: `t-${randomUUID()}` });
const outbox = async (userId: string) =>
  (
    await api.rt.db.query<{ id: string; seq: string; payload: object; created_at: string }>(
      'test.outbox',
      'SELECT id, seq, payload, created_at FROM event_outbox WHERE user_id = $1 ORDER BY seq',
      [userId],
    )
  ).rows;
const attempts = async (token: string, id: string) =>
  (await api.request('GET', `/webhooks/${id}/deliveries?limit=200`, { token })).body.items;

beforeAll(async () => {
  api = await startApi();
});
afterEach(async () => {
  // Receivers first: a hanging one's connections close, so the attempts in flight end and the dispatchers can stop.
  await Promise.all(receivers.splice(0).map((r) => r.stop()));
  await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
});
afterAll(() => api?.close());

describe('webhook delivery', () => {
  it('should POST the WebSocket JSON of each event, signed per Standard Webhooks, webhook-id = event_id', async () => {
    const s = await subscriber();
    dispatch();
    await tag(s.token);
    await tag(s.token);
    await until('two deliveries', () => s.receiver.ids().length >= 2, POLL);
    const events = await outbox(s.userId);
    expect(s.receiver.received.map((r) => r.verified)).toEqual([true, true]);
    expect(s.receiver.received.map((r) => r.body)).toEqual(
      events.map((e) => ({ ...e.payload, event_id: e.id, seq: Number(e.seq), occurred_at: e.created_at })),
    );
    expect(s.receiver.ids()).toEqual(events.map((e) => e.id));
    const log = await attempts(s.token, s.webhookId);
    expect(log.map((a) => [a.event_id, a.attempt, a.status_code, a.error])).toEqual(
      events.map((e) => [e.id, 1, 200, null]).reverse(),
    );
  });

  it('should send only the subscribed types and never AudioStoredProgressEvent', async () => {
    const only = await subscriber(['TalkingPointEvent']);
    const meetingId = await api.meeting(only.token);
    dispatch();
    await api.rt.db.withTransaction(async (tx) => {
      await appendEvent(
        tx,
        only.userId,
        progressEvent({
          meeting_id: meetingId,
          audio_version: 1,
          highest_contiguous_sequence: 1,
          frames_stored: 1,
          bytes_stored: 1,
        }),
      );
      await appendEvent(tx, only.userId, talkingPointEvent(meetingId, { id: randomUUID(), text: 'x' }));
    });
    await tag(only.token);
    await api.request('POST', `/webhooks/${only.webhookId}/test`, { token: only.token });
    // The test event is queued after the others were written: when it has arrived, everything before it was fanned out.
    await until('the test event', () => only.receiver.received.some((r) => r.body.type === 'WebhookTest'), POLL);
    await until(
      'the talking point',
      () => only.receiver.received.some((r) => r.body.type === 'TalkingPointEvent'),
      POLL,
    );
    const types = only.receiver.received.map((r) => r.body.type).sort();
    expect(types).toEqual(['TalkingPointEvent', 'WebhookTest']);
  });

  it('should retry a failing receiver on the schedule with the same webhook-id, then succeed', async () => {
    const s = await subscriber();
    // Two 500s, then 204: counted by the receiver, so a loaded machine cannot let the retries run out first.
    s.receiver.failures = 2;
    s.receiver.mode = { status: 204 };
    dispatch();
    await tag(s.token);
    await until('success', () => s.receiver.ids().length === 1, POLL);
    const log = (
      await until('the success logged', () => attempts(s.token, s.webhookId), {
        ...POLL,
        ok: (a) => a?.[0]?.status_code === 204,
      })
    ).reverse();
    expect(new Set(s.receiver.received.map((r) => r.id)).size).toBe(1);
    expect(log.map((a) => [a.attempt, a.status_code])).toEqual([
      [1, 500],
      [2, 500],
      [3, 204],
    ]);
    // Each retry waited at least its delay of the schedule (0.1 s, 0.2 s, ...).
    const at = log.map((a) => Date.parse(a.attempted_at));
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBeGreaterThanOrEqual([100, 200, 300][i - 1] - 5);
    expect((await api.request('GET', `/webhooks/${s.webhookId}`, { token: s.token })).body.enabled).toBe(true);
  });

  it('should give a delivery up after the last retry and disable an endpoint failing for the whole period', async () => {
    const s = await subscriber();
    s.receiver.mode = { status: 410 };
    dispatch({ retrySchedule: [0.05, 0.05], disableAfterSeconds: 0.6 });
    await tag(s.token);
    await until('three attempts', async () => (await attempts(s.token, s.webhookId)).length === 3, POLL);
    const { rows } = await api.rt.db.query(
      'test.pending',
      'SELECT count(*)::int AS n FROM webhook_delivery WHERE webhook_id = $1',
      [s.webhookId],
    );
    expect(rows[0].n).toBe(0);
    // Events keep failing; past 0.6 s of failures the endpoint is disabled.
    await until(
      'disabled',
      async () => {
        await tag(s.token);
        return (await api.request('GET', `/webhooks/${s.webhookId}`, { token: s.token })).body.enabled === false;
      },
      POLL,
    );
    // Enabled again, it resumes: what was pending or written meanwhile arrives.
    s.receiver.mode = { status: 200 };
    await api.request('PATCH', `/webhooks/${s.webhookId}`, { token: s.token, body: { enabled: true } });
    const later = (await tag(s.token)).body.id;
    await until(
      'delivery after enabling',
      () => s.receiver.received.some((r) => r.status === 200 && r.body.id === later),
      POLL,
    );
  });

  it('should send POST /webhooks/{id}/test at once, verified', async () => {
    const s = await subscriber();
    dispatch();
    const queued = await api.request('POST', `/webhooks/${s.webhookId}/test`, { token: s.token });
    await until('the test event', () => s.receiver.ids().includes(queued.body.event_id), POLL);
    expect(s.receiver.received[0]).toMatchObject({
      verified: true,
      body: { type: 'WebhookTest', webhook_id: s.webhookId },
    });
  });

  it("should not let a receiver that never answers stall other users' deliveries; it times out", async () => {
    const slow = await subscriber();
    const fast = await subscriber();
    slow.receiver.mode = 'hang';
    dispatch({ timeoutMs: 1500 });
    await tag(slow.token);
    await until(
      'the slow attempt to start',
      async () =>
        (await api.rt.db.query('test.lease', 'SELECT lease_until FROM webhook WHERE id = $1', [slow.webhookId])).rows[0]
          .lease_until,
      POLL,
    );
    await tag(fast.token);
    await until('the fast delivery', () => fast.receiver.ids().length === 1, POLL);
    expect(await attempts(slow.token, slow.webhookId)).toEqual([]); // still in flight
    const [timedOut] = await until('the timeout', () => attempts(slow.token, slow.webhookId), {
      ...POLL,
      ok: (a) => !!a?.length,
    });
    expect(timedOut).toMatchObject({ attempt: 1, status_code: null, error: 'no answer within 1.5 s' });
  });

  it('should retry a delivery whose dispatcher died in flight once its lease lapses', async () => {
    const s = await subscriber();
    await tag(s.token);
    // A dispatcher fans out and claims, then dies before attempting (no outcome is written).
    const dead = dispatch({ concurrency: 0 });
    await until(
      'queued',
      async () =>
        (await api.rt.db.query('test.q', 'SELECT 1 FROM webhook_delivery WHERE webhook_id = $1', [s.webhookId]))
          .rowCount,
      POLL,
    );
    await dead.stop();
    expect((await claimDue(api.rt.db, 100, 0.3)).map((c) => c.webhook_id)).toContain(s.webhookId);
    dispatch();
    await until('the retried delivery', () => s.receiver.ids().length === 1, POLL);
    const log = await until('its attempt logged', () => attempts(s.token, s.webhookId), {
      ...POLL,
      ok: (a) => !!a?.length,
    });
    expect(log.map((a) => [a.attempt, a.status_code])).toEqual([[1, 200]]);
  });

  it('should keep one attempt in flight per endpoint across dispatchers, each event delivered once and in seq order', async () => {
    const s = await subscriber();
    s.receiver.delayMs = 15;
    for (let i = 0; i < 12; i++) await tag(s.token);
    dispatch();
    dispatch();
    dispatch();
    await until('all 12', () => s.receiver.ids().length >= 12, POLL);
    const events = await outbox(s.userId);
    expect(s.receiver.ids()).toEqual(events.map((e) => e.id));
    expect(s.receiver.maxInFlight).toBe(1);
  });

  it('should keep the delivery log 7 days (the sweep prunes older attempts)', async () => {
    const s = await subscriber();
    await api.rt.db.query(
      'test.old_attempts',
      `INSERT INTO webhook_attempt (webhook_id, event_id, attempt, status_code, duration_ms, attempted_at)
       VALUES ($1, gen_random_uuid(), 1, 200, 5, now() - interval '8 days'), ($1, gen_random_uuid(), 1, 200, 6, now() - interval '6 days')`,
      [s.webhookId],
    );
    expect((await pruneExpired(api.rt.db, 48)).webhookAttempts).toBeGreaterThanOrEqual(1);
    expect((await attempts(s.token, s.webhookId)).map((a) => a.duration_ms)).toEqual([6]);
  });

  it("should keep past retention the events an enabled endpoint's cursor has not passed, and deliver them", async () => {
    const s = await subscriber();
    const off = await subscriber();
    await api.request('PATCH', `/webhooks/${off.webhookId}`, { token: off.token, body: { enabled: false } });
    for (const u of [s, off]) for (let i = 0; i < 3; i++) await tag(u.token);
    const age = "UPDATE event_outbox SET created_at = now() - interval '3 days' WHERE user_id = ANY($1)";
    await api.rt.db.query('test.age', age, [[s.userId, off.userId]]);
    // No dispatcher ran: the cursor is before all three. A disabled endpoint holds nothing back.
    await pruneExpired(api.rt.db, 48);
    expect(await outbox(s.userId)).toHaveLength(3);
    expect(await outbox(off.userId)).toHaveLength(0);

    dispatch();
    await until('all three', () => s.receiver.ids().length >= 3, POLL);
    expect(s.receiver.ids()).toEqual((await outbox(s.userId)).map((e) => e.id));
    // Queued deliveries carry their bodies: past the cursor, the events go at the next pass.
    await pruneExpired(api.rt.db, 48);
    expect(await outbox(s.userId)).toHaveLength(0);
  });

  it('should deliver every event after the receiver was down for a while, each webhook-id at least once', async () => {
    const s = await subscriber();
    dispatch({ retrySchedule: [0.1, 0.2, 0.4, 0.8, 1, 1, 1] });
    await s.receiver.stop();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await tag(s.token)).body.id);
    await until(
      'failed attempts while down',
      async () => (await attempts(s.token, s.webhookId)).filter((a) => a.error).length >= 3,
      POLL,
    );
    await s.receiver.start();
    await until('every event', () => new Set(s.receiver.ids()).size >= 10, POLL);
    const events = await outbox(s.userId);
    expect(new Set(s.receiver.ids())).toEqual(new Set(events.map((e) => e.id)));
    expect(s.receiver.received.every((r) => r.verified)).toBe(true);
  });

  it('should sign with the new and the previous secret during the overlap, and with the new one only once it ends', async () => {
    const s = await subscriber();
    const first = s.receiver;
    dispatch();
    const old = (await api.rt.db.query('test.secret', 'SELECT secret FROM webhook WHERE id = $1', [s.webhookId]))
      .rows[0].secret as string;
    const rotated = await api.post(s.token, `/webhooks/${s.webhookId}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    expect(fresh).not.toBe(old);
    await tag(s.token);
    await until('the delivery after the rotation', () => first.ids().length === 1, POLL);
    const during = first.received[0];
    // v1,<new> v1,<old>: each secret alone verifies it (the standardwebhooks package, as a receiver would).
    expect(during.headers['webhook-signature'].split(' ')).toEqual([
      expect.stringMatching(/^v1,/),
      expect.stringMatching(/^v1,/),
    ]);
    for (const secret of [fresh, old]) expect(new Webhook(secret).verify(during.raw, during.headers)).toBeTruthy();
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(during.raw, during.headers),
    ).toThrow();

    // Rotated again with expire_previous: only the newest secret signs; the two before no longer verify.
    const newest = (await api.post(s.token, `/webhooks/${s.webhookId}/rotate-secret`, { expire_previous: true })).body
      .secret as string;
    await tag(s.token);
    await until('the delivery after the second rotation', () => first.ids().length === 2, POLL);
    const after = first.received[1];
    expect(after.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(new Webhook(newest).verify(after.raw, after.headers)).toBeTruthy();
    for (const secret of [fresh, old]) expect(() => new Webhook(secret).verify(after.raw, after.headers)).toThrow();
  });

  it('should end the overlap when it lapses: the previous secret no longer signs', async () => {
    const s = await subscriber();
    dispatch();
    const old = (await api.rt.db.query('test.secret', 'SELECT secret FROM webhook WHERE id = $1', [s.webhookId]))
      .rows[0].secret as string;
    const fresh = (await api.post(s.token, `/webhooks/${s.webhookId}/rotate-secret`, {})).body.secret as string;
    // The overlap's end, brought forward (WEBHOOK_SECRET_OVERLAP_SECONDS is 24 h here).
    await api.rt.db.query('test.lapse', 'UPDATE webhook SET previous_secret_expires_at = now() WHERE id = $1', [
      s.webhookId,
    ]);
    await tag(s.token);
    await until('the delivery', () => s.receiver.ids().length === 1, POLL);
    const got = s.receiver.received[0];
    expect(new Webhook(fresh).verify(got.raw, got.headers)).toBeTruthy();
    expect(() => new Webhook(old).verify(got.raw, got.headers)).toThrow();
  });
});

describe('webhook fairness between users', () => {
  const hangingNow = (hs: { receiver: Receiver }[]) => hs.reduce((n, h) => n + h.receiver.hanging, 0);
  // The attempts to receivers that hang never time out here (10 min): only a free slot lets the healthy one through.
  const forever = 600_000;

  it('should hold at most maxPerUser attempts of one user in flight: a healthy endpoint gets through', async () => {
    // 3 users × 3 endpoints that never answer, 8 slots: without the cap all 8 would hang.
    const hanging: Awaited<ReturnType<typeof subscriber>>[] = [];
    for (let i = 0; i < 3; i++) {
      const h = await subscriber(['*'], 3);
      h.receiver.mode = 'hang';
      hanging.push(h);
    }
    dispatch({ concurrency: 8, maxPerUser: 2, timeoutMs: forever });
    for (const h of hanging) await tag(h.token);
    await until('2 attempts of each hanging user in flight', () => hangingNow(hanging) >= 6, POLL);

    const healthy = await subscriber();
    for (let i = 0; i < 3; i++) await tag(healthy.token);
    await until('every healthy delivery', () => healthy.receiver.ids().length >= 3, POLL);
    expect(healthy.receiver.ids()).toEqual((await outbox(healthy.userId)).map((e) => e.id));
    for (const h of hanging) expect(h.receiver.maxHanging).toBe(2);
  });

  it('should give failing endpoints at most half the slots: users each with one that never answers cannot fill them', async () => {
    // 4 users, one endpoint each: answers 500 once (the endpoint is failing), then never answers. 4 slots.
    const hanging: Awaited<ReturnType<typeof subscriber>>[] = [];
    for (let i = 0; i < 4; i++) {
      const h = await subscriber();
      h.receiver.failures = 1;
      h.receiver.mode = 'hang';
      hanging.push(h);
    }
    dispatch({ concurrency: 4, timeoutMs: forever, retrySchedule: [0.05, 0.05, 0.05] });
    for (const h of hanging) await tag(h.token);
    await until(
      'every hanging endpoint failing',
      async () =>
        (
          await api.rt.db.query(
            'test.failing',
            'SELECT 1 FROM webhook WHERE id = ANY($1) AND failing_since IS NOT NULL',
            [hanging.map((h) => h.webhookId)],
          )
        ).rowCount === 4,
      POLL,
    );
    await until('2 failing attempts in flight', () => hangingNow(hanging) >= 2, POLL);

    const healthy = await subscriber();
    for (let i = 0; i < 3; i++) await tag(healthy.token);
    await until('every healthy delivery', () => healthy.receiver.ids().length >= 3, POLL);
    expect(healthy.receiver.ids()).toEqual((await outbox(healthy.userId)).map((e) => e.id));
    expect(hangingNow(hanging)).toBe(2);
  });
});
