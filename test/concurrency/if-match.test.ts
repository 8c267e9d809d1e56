// If-Match against a write that commits while the check waits, on native PostgreSQL: an outside
// transaction changes the record and holds its row; the request with the tag it read before is
// sent, and the outside transaction commits once the database shows the request waiting. The
// check reads the row FOR UPDATE, so it waits and then sees the change: 412, nothing written.
// Without the FOR UPDATE the check passes on the old row and the write lands after the commit.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaits, outsideClient } from '../support/lock-waits';

let api: ApiHarness;
let alice: string;

withNativeApi(async (started) => {
  api = started;
  alice = await api.token('alice');
});

const created = (path: string, body: unknown) => async () => (await api.post(alice, path, body)).body.id as string;

async function freshSegment(): Promise<string> {
  const m = await api.meeting(alice, 'recording');
  const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
  const segments = [{ speaker_label: 'S0', text: 'hello', start_ms: 0, end_ms: 1000 }];
  const appended = await api.request('POST', `/transcriptions/${t}/segments`, {
    token: api.serviceToken,
    body: { segments },
  });
  expect(appended.status).toBe(204);
  return (await api.request('GET', `/transcriptions/${t}/segments`, { token: alice })).body.items[0].id;
}

const deletable = [
  { name: 'meeting', path: '/meetings', table: 'meeting', field: 'title' },
  { name: 'person', path: '/people', table: 'person', field: 'display_name' },
  { name: 'task', path: '/tasks', table: 'task', field: 'content' },
  { name: 'note', path: '/notes', table: 'note', field: 'content' },
].map((r) => ({
  ...r,
  fresh: created(r.path, r.name === 'meeting' ? { title: 'm', source_type: 'text' } : { [r.field]: 'first' }),
}));
const patchable = [
  ...deletable,
  { name: 'segment', path: '/transcript-segments', table: 'transcript_segment', field: 'text', fresh: freshSegment },
];

/**
 * Sends `request` while an outside transaction has changed the record's `field` to `value` and
 * holds the row; commits once the request waits for it (polled), and returns the answer.
 */
async function raceOutsideChange(
  table: string,
  field: string,
  id: string,
  value: string,
  request: () => Promise<{ status: number; text: string }>,
) {
  const outside = await outsideClient(api);
  try {
    await outside.query('BEGIN');
    await outside.query(`UPDATE ${table} SET ${field} = $2 WHERE id = $1`, [id, value]);
    const answer = request();
    await lockWaits(api);
    await outside.query('COMMIT');
    return await answer;
  } finally {
    await outside.end();
  }
}

describe.skipIf(!native).each(patchable)('If-Match PATCH of a $name', ({ path, table, field, fresh }) => {
  it('should answer 412 when the record changed while its check waited for the row', async () => {
    const id = await fresh();
    const tag = (await api.request('GET', `${path}/${id}`, { token: alice })).headers.get('etag')!;
    const outsideValue = `outside ${randomUUID()}`;
    const answer = await raceOutsideChange(table, field, id, outsideValue, () =>
      api.request('PATCH', `${path}/${id}`, { token: alice, body: { [field]: 'stale' }, headers: { 'if-match': tag } }),
    );
    expect(answer.status, answer.text).toBe(412);
    expect((await api.request('GET', `${path}/${id}`, { token: alice })).body[field]).toBe(outsideValue);
  });
});

describe.skipIf(!native).each(deletable)('If-Match DELETE of a $name', ({ path, table, field, fresh }) => {
  it('should answer 412 when the record changed while its check waited for the row', async () => {
    const id = await fresh();
    const tag = (await api.request('GET', `${path}/${id}`, { token: alice })).headers.get('etag')!;
    const outsideValue = `outside ${randomUUID()}`;
    const answer = await raceOutsideChange(table, field, id, outsideValue, () =>
      api.request('DELETE', `${path}/${id}`, { token: alice, headers: { 'if-match': tag } }),
    );
    expect(answer.status, answer.text).toBe(412);
    expect((await api.request('GET', `${path}/${id}`, { token: alice })).body[field]).toBe(outsideValue);
  });
});
