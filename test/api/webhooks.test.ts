import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;
let bob: string;

const body = (over: Record<string, unknown> = {}) => ({
  url: 'http://localhost:9/hook',
  event_types: ['EntityChanged'],
  ...over,
});
const create = (token: string, b: unknown, key?: string) => api.post(token, '/webhooks', b, key);

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
});
afterAll(() => api?.close());

describe('webhooks', () => {
  it('should create a webhook with a whsec_ secret shown once, then get, list, update and delete it', async () => {
    const res = await create(alice, body({ description: 'CRM sync' }));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      url: 'http://localhost:9/hook',
      event_types: ['EntityChanged'],
      description: 'CRM sync',
      enabled: true,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(Buffer.from(res.body.secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);
    const { secret, ...shown } = res.body;
    const got = await api.request('GET', `/webhooks/${res.body.id}`, { token: alice });
    expect(got.body).toEqual(shown);
    expect(got.text).not.toContain(secret);
    const listed = await api.request('GET', '/webhooks', { token: alice });
    expect(listed.body.items).toEqual([shown]);
    expect(listed.text).not.toContain(secret);

    const patched = await api.request('PATCH', `/webhooks/${res.body.id}`, {
      token: alice,
      body: { event_types: ['*'], description: null, enabled: false },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ event_types: ['*'], description: null, enabled: false, url: shown.url });

    expect((await api.request('DELETE', `/webhooks/${res.body.id}`, { token: alice })).status).toBe(204);
    expect((await api.request('GET', `/webhooks/${res.body.id}`, { token: alice })).status).toBe(404);
    expect((await api.request('DELETE', `/webhooks/${res.body.id}`, { token: alice })).status).toBe(404);
  });

  it('should replay a create with the same Idempotency-Key (same secret, one webhook)', async () => {
    const carol = await api.token('carol');
    const key = randomUUID();
    const first = await create(carol, body(), key);
    const again = await create(carol, body(), key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect((await api.request('GET', '/webhooks', { token: carol })).body.items).toHaveLength(1);
  });

  it('should answer 422 problem+json for bad URLs and event types, changing nothing', async () => {
    const dave = await api.token('dave');
    const bad = [
      body({ url: 'not a url' }),
      body({ url: 'ftp://localhost/hook' }),
      body({ url: 'http://example.com/hook' }), // http only for localhost / 127.0.0.1
      body({ url: 'http://10.0.0.1/hook' }),
      body({ url: 'https://user:pw@example.com/hook' }),
      body({ event_types: ['AudioStoredProgressEvent'] }),
      body({ event_types: ['Nope'] }),
      body({ event_types: [] }),
      body({ event_types: ['*', 'EntityChanged'] }),
      body({ event_types: ['EntityChanged', 'EntityChanged'] }),
      body({ extra: 1 }),
      { event_types: ['EntityChanged'] },
    ];
    for (const b of bad) {
      const res = await create(dave, b);
      expect(res.status, JSON.stringify(b)).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await api.request('GET', '/webhooks', { token: dave })).body.items).toEqual([]);
    const ok = await create(dave, body({ url: 'https://example.com/hook' }));
    expect(ok.status).toBe(201);
    for (const patch of [{}, { url: 'ftp://x/' }, { event_types: ['Nope'] }, { enabled: 'yes' }]) {
      expect(
        (await api.request('PATCH', `/webhooks/${ok.body.id}`, { token: dave, body: patch })).status,
        JSON.stringify(patch),
      ).toBe(422);
    }
    expect((await api.request('GET', `/webhooks/${ok.body.id}`, { token: dave })).body.url).toBe(
      'https://example.com/hook',
    );
  });

  it("should answer 404 for another user's webhook on every operation", async () => {
    const own = (await create(alice, body())).body.id;
    for (const [method, path, b] of [
      ['GET', `/webhooks/${own}`],
      ['PATCH', `/webhooks/${own}`, { enabled: false }],
      ['DELETE', `/webhooks/${own}`],
      ['GET', `/webhooks/${own}/deliveries`],
      ['POST', `/webhooks/${own}/test`],
    ] as const) {
      const res = await api.request(method, path, { token: bob, body: b });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.type).toMatch(/not_found$/);
    }
    expect((await api.request('GET', `/webhooks/${own}`, { token: alice })).body.enabled).toBe(true);
  });

  it('should queue a WebhookTest (202) and refuse it with 409 while the webhook is disabled', async () => {
    const erin = await api.token('erin');
    const id = (await create(erin, body())).body.id;
    const queued = await api.request('POST', `/webhooks/${id}/test`, { token: erin });
    expect(queued.status).toBe(202);
    const { rows } = await api.rt.db.query<{ body: string }>(
      'test.delivery',
      'SELECT body FROM webhook_delivery WHERE webhook_id = $1',
      [id],
    );
    expect(JSON.parse(rows[0].body)).toEqual({
      type: 'WebhookTest',
      event_id: queued.body.event_id,
      occurred_at: expect.any(String),
      webhook_id: id,
    });
    await api.request('PATCH', `/webhooks/${id}`, { token: erin, body: { enabled: false } });
    const refused = await api.request('POST', `/webhooks/${id}/test`, { token: erin });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/disabled/);
  });

  it('should refuse a 21st webhook of a user with 422', async () => {
    const fred = await api.token('fred');
    for (let i = 0; i < 20; i++) expect((await create(fred, body())).status).toBe(201);
    const res = await create(fred, body());
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/at most 20/);
  });

  it('should page the delivery log newest first and refuse a bad cursor', async () => {
    const gina = await api.token('gina');
    const id = (await create(gina, body())).body.id;
    await api.rt.db.query(
      'test.attempts',
      `INSERT INTO webhook_attempt (webhook_id, event_id, attempt, status_code, error, duration_ms, attempted_at)
       SELECT $1, gen_random_uuid(), 1, CASE WHEN i % 2 = 0 THEN 200 END, CASE WHEN i % 2 = 1 THEN 'request failed: ECONNREFUSED' END, i,
              now() - make_interval(secs => i) FROM generate_series(1, 5) AS i`,
      [id],
    );
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.request('GET', `/webhooks/${id}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        token: gina,
      });
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((a) => a.duration_ms));
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect((await api.request('GET', `/webhooks/${id}/deliveries?cursor=bad`, { token: gina })).status).toBe(400);
  });

  it('should rotate the secret (200, shown once), keep the previous one for the overlap, and replay by Idempotency-Key', async () => {
    const hana = await api.token('hana');
    const created = (await create(hana, body())).body;
    const secrets = async () =>
      (
        await api.rt.db.query(
          'test.secrets',
          `SELECT secret, previous_secret, previous_secret_expires_at > now() + interval '23 hours' AS overlaps,
                  previous_secret_expires_at IS NULL AS none
           FROM webhook WHERE id = $1`,
          [created.id],
        )
      ).rows[0];
    const key = randomUUID();
    const rotated = await api.post(hana, `/webhooks/${created.id}/rotate-secret`, {}, key);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/) });
    expect(rotated.body.secret).not.toBe(created.secret);
    expect(await secrets()).toEqual({
      secret: rotated.body.secret,
      previous_secret: created.secret,
      overlaps: true,
      none: false,
    });
    // The same key again: the same secret, no second rotation.
    const replay = await api.post(hana, `/webhooks/${created.id}/rotate-secret`, {}, key);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(rotated.body);
    expect((await secrets()).previous_secret).toBe(created.secret);
    // Never shown again.
    const got = await api.request('GET', `/webhooks/${created.id}`, { token: hana });
    expect(got.text).not.toContain(rotated.body.secret);

    // Without a body it rotates too; expire_previous ends the overlap at once.
    const bare = await api.request('POST', `/webhooks/${created.id}/rotate-secret`, {
      token: hana,
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(bare.status).toBe(200);
    expect((await secrets()).previous_secret).toBe(rotated.body.secret);
    const expired = await api.post(hana, `/webhooks/${created.id}/rotate-secret`, { expire_previous: true });
    expect(expired.status).toBe(200);
    expect(await secrets()).toMatchObject({ secret: expired.body.secret, previous_secret: null, none: true });
  });

  it('should answer 422 for a bad rotation body, 404 for an unknown webhook and 400 without Idempotency-Key, changing nothing', async () => {
    const ivan = await api.token('ivan');
    const created = (await create(ivan, body())).body;
    const secret = async () =>
      (await api.rt.db.query('test.secret', 'SELECT secret FROM webhook WHERE id = $1', [created.id])).rows[0].secret;
    for (const b of [{ expire_previous: 'yes' }, { expire_previous: null }, { extra: 1 }, [], '"x"']) {
      const res = await api.post(ivan, `/webhooks/${created.id}/rotate-secret`, b);
      expect(res.status, JSON.stringify(b)).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    const unknown = await api.post(ivan, `/webhooks/${randomUUID()}/rotate-secret`, {});
    expect(unknown.status).toBe(404);
    const keyless = await api.request('POST', `/webhooks/${created.id}/rotate-secret`, { token: ivan, body: {} });
    expect(keyless.status).toBe(400);
    expect(await secret()).toBe(created.secret);
  });
});
