// An idempotent replay is the first response, byte for byte, with its headers (decisions.md
// section 6): jsonb would reorder the keys of a re-serialised body.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

describe('idempotent replay', () => {
  it('should return the exact bytes and headers of the first response', async () => {
    const key = randomUUID();
    const body = {
      display_name: `Zoe ${key.slice(0, 6)}`,
      tags: { zeta: 1, alpha: { b: [3, 2, 1], a: 'x' }, mid: null },
    };
    const first = await api.post(alice, '/people', body, key);
    expect(first.status).toBe(201);
    const replay = await api.post(alice, '/people', body, key);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    // The stored body is the text itself, not a jsonb value.
    const { rows } = await api.rt.db.query(
      'test.idem',
      'SELECT response_raw, response_body FROM idempotency_record WHERE key = $1',
      [key],
    );
    expect(rows).toEqual([{ response_raw: first.text, response_body: null }]);
  });

  it('should replay an empty 204 answer as one', async () => {
    const m = await api.meeting(alice);
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    const key = randomUUID();
    const segments = { segments: [{ text: 'x', start_ms: 0 }] };
    const send = () =>
      api.request('POST', `/transcriptions/${t}/segments`, {
        token: api.serviceToken,
        body: segments,
        headers: { 'idempotency-key': key },
      });
    const first = await send();
    const replay = await send();
    expect([first.status, replay.status]).toEqual([204, 204]);
    expect(replay.text).toBe('');
  });
});
