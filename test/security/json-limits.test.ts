// Bounded JSON (decisions.md section 6): a free-form member above 256 KiB serialised is 422
// naming the field; a list page is cut short with a next_cursor rather than pass 4 MiB; bodies
// are bounded at API_MAX_JSON_BYTES (1 MiB) but for the service's bulk writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';
import { rawRequest } from '../support/http';

let api: ApiHarness;
let alice: string;
const KIB = 1024;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

/** A JSON value of exactly `bytes` serialised. */
const sized = (bytes: number) => ['x'.repeat(bytes - 4)];

describe('free-form JSON members', () => {
  it.each([
    [
      'POST /people',
      'tags',
      (v: unknown) => api.post(alice, '/people', { display_name: `p${Math.random()}`, tags: v }),
    ],
    ['POST /notes', 'tags', (v: unknown) => api.post(alice, '/notes', { content: 'n', tags: v })],
    [
      'POST /meetings',
      'key_points',
      (v: unknown) => api.post(alice, '/meetings', { title: 't', source_type: 'text', key_points: v }),
    ],
  ])('%s: should take %s of 256 KiB and refuse 256 KiB + 1 with 422 naming it', async (_, field, send) => {
    expect(Buffer.byteLength(JSON.stringify(sized(256 * KIB)))).toBe(256 * KIB);
    expect((await send(sized(256 * KIB))).status).toBe(201);
    const refused = await send(sized(256 * KIB + 1));
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([{ path: field, message: 'must be at most 256 KiB serialised' }]);
  });
});

describe('list pages', () => {
  it('should cut a page short of 4 MiB with a next_cursor, and the next pages give the rest once each', async () => {
    const owner = await api.token('hoarder');
    const created: string[] = [];
    for (let i = 0; i < 24; i++)
      created.push((await api.post(owner, '/people', { display_name: `big ${i}`, tags: sized(250 * KIB) })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.request('GET', `/people?limit=200${cursor ? `&cursor=${cursor}` : ''}`, { token: owner });
      expect(res.status).toBe(200);
      expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(4 * KIB * KIB + 64 * KIB);
      seen.push(...res.body.items.map((p) => p.id));
      cursor = res.body.next_cursor as string | null;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBeGreaterThan(1);
    expect(seen.sort()).toEqual(created.sort());
  });
});

describe('body limits', () => {
  it('should refuse a JSON body above 1 MiB with 413, but take a bulk segment write above it', async () => {
    // The answer comes before the body is read whole: a raw request reads it where fetch would fail on the closed socket.
    const big = await rawRequest(api.url, '/meetings', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${alice}`,
        'content-type': 'application/json',
        'idempotency-key': crypto.randomUUID(),
      },
      body: JSON.stringify({ title: 'x'.repeat(KIB * KIB), source_type: 'text' }),
    });
    expect(big.status).toBe(413);
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    const vector = Array.from({ length: 192 }, (_, i) => Math.sin(i) / 3);
    const segments = Array.from({ length: 1500 }, (_, i) => ({
      text: `segment ${i}`,
      start_ms: i * 1000,
      feature_vector: vector,
    }));
    const body = { segments };
    expect(Buffer.byteLength(JSON.stringify(body))).toBeGreaterThan(2 * KIB * KIB);
    expect((await api.request('PUT', `/transcriptions/${t}/segments`, { token: api.serviceToken, body })).status).toBe(
      204,
    );
  });
});
