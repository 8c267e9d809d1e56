// GET /search: full-text search over one user's segments, notes, talking points and meeting
// titles; both sorts, marked snippets, filters, keyset pagination and its query-bound cursors, tenancy,
// soft deletes, errors.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let svc: string;

beforeAll(async () => {
  api = await startApi();
  svc = api.serviceToken;
});
afterAll(() => api?.close());

/** A fresh user per test, so each test sees only its own records. */
const user = () => api.token(`u-${randomUUID()}`);

async function meeting(token: string, title: string, start_time = '2026-06-01T09:00:00.000Z'): Promise<string> {
  const res = await api.post(token, '/meetings', { title, source_type: 'text', start_time });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function segments(
  token: string,
  meetingId: string,
  items: { text: string; start_ms: number; person_id?: string }[],
): Promise<string[]> {
  const t = await api.post(token, `/meetings/${meetingId}/transcriptions`);
  expect(t.status, t.text).toBe(201);
  const res = await api.request('POST', `/transcriptions/${t.body.id}/segments`, {
    token: svc,
    body: { segments: items },
  });
  expect(res.status, res.text).toBe(204);
  const list = await api.request('GET', `/transcriptions/${t.body.id}/segments?limit=200`, { token });
  return list.body.items.map((s) => s.id);
}

async function note(
  token: string,
  content: string,
  subject?: { type: 'PERSON' | 'MEETING'; id: string },
): Promise<string> {
  const res = await api.post(token, '/notes', {
    content,
    ...(subject ? { subject_type: subject.type, subject_id: subject.id } : {}),
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function talkingPoint(meetingId: string, content: string): Promise<string> {
  const res = await api.post(svc, `/meetings/${meetingId}/talking-points`, { content });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function person(token: string, name: string): Promise<string> {
  const res = await api.post(token, '/people', { display_name: name });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

const search = (token: string, query: Record<string, string | number>) =>
  api.request('GET', `/search?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`, {
    token,
  });

async function ok(token: string, query: Record<string, string | number>): Promise<any[]> {
  const res = await search(token, query);
  expect(res.status, res.text).toBe(200);
  return res.body.items;
}

/** Every page from the first, following next_cursor. */
async function allPages(
  token: string,
  query: Record<string, string | number>,
): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await search(token, { ...query, ...(cursor ? { cursor } : {}) });
    expect(res.status, res.text).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.next_cursor;
    pages++;
  } while (cursor && pages < 100);
  return { items, pages };
}

describe('GET /search', () => {
  it('should find segments, notes, talking points and meeting titles, each with its shape', async () => {
    const t = await user();
    const m = await meeting(t, 'Budget review');
    const [seg] = await segments(t, m, [
      { text: 'we should cut the budget by ten percent', start_ms: 4200 },
      { text: 'unrelated chatter', start_ms: 9000 },
    ]);
    const n = await note(t, 'Budget owner is Dana', { type: 'MEETING', id: m });
    const tp = await talkingPoint(m, 'Budget cut agreed');
    const items = await ok(t, { q: 'budget' });
    expect(items.map((i) => `${i.kind}:${i.id}`).sort()).toEqual(
      [`meeting:${m}`, `note:${n}`, `segment:${seg}`, `talking_point:${tp}`].sort(),
    );
    const segment = items.find((i) => i.kind === 'segment');
    expect(segment).toEqual({
      kind: 'segment',
      id: seg,
      meeting_id: m,
      snippet: 'we should cut the <mark>budget</mark> by ten percent',
      rank: expect.any(Number),
      start_time: '2026-06-01T09:00:00.000Z',
      start_ms: 4200,
    });
    // Best first: the title (weight A), the talking point (B), then the others.
    expect(items.slice(0, 2).map((i) => i.kind)).toEqual(['meeting', 'talking_point']);
    for (const i of items) {
      expect(i.meeting_id).toBe(m);
      expect(i.rank).toBeGreaterThan(0);
      expect(i.start_time).toBe('2026-06-01T09:00:00.000Z');
      expect(i.snippet.toLowerCase()).toContain('<mark>budget</mark>');
      if (i.kind !== 'segment') expect(i).not.toHaveProperty('start_ms');
    }
  });

  it('should stem words (english) and ignore stop words', async () => {
    const t = await user();
    const m = await meeting(t, 'm');
    const [seg] = await segments(t, m, [{ text: 'The budgets were decided', start_ms: 0 }]);
    const items = await ok(t, { q: 'budget decide' });
    expect(items.map((i) => i.id)).toEqual([seg]);
    expect(items[0].snippet).toBe('The <mark>budgets</mark> were <mark>decided</mark>');
    // Stemming, as the q parameter's description says: "decided" finds "deciding" and "decides", not "decision" (another stem).
    const [deciding, decides] = await segments(t, m, [
      { text: 'deciding soon', start_ms: 1 },
      { text: 'she decides', start_ms: 2 },
      { text: 'a decision', start_ms: 3 },
    ]);
    expect((await ok(t, { q: 'decided' })).map((i) => i.id).sort()).toEqual([seg, deciding, decides].sort());
    // Only stop words: a valid query that matches nothing.
    expect(await ok(t, { q: 'the were' })).toEqual([]);
  });

  it('should follow web search syntax: phrases, or, exclusion', async () => {
    const t = await user();
    const m = await meeting(t, 'm');
    const [a, b, c] = await segments(t, m, [
      { text: 'red team review', start_ms: 0 },
      { text: 'review of the red paint', start_ms: 1 },
      { text: 'blue team', start_ms: 2 },
    ]);
    expect((await ok(t, { q: '"red team"' })).map((i) => i.id)).toEqual([a]);
    expect((await ok(t, { q: 'red -paint' })).map((i) => i.id)).toEqual([a]);
    expect((await ok(t, { q: 'paint or blue' })).map((i) => i.id).sort()).toEqual([b, c].sort());
  });

  it('should rank denser matches and titles first, best first', async () => {
    const t = await user();
    const m = await meeting(t, 'Hiring plan');
    const [once, thrice] = await segments(t, m, [
      { text: 'we talked about hiring briefly and then moved on to many other unrelated subjects today', start_ms: 0 },
      { text: 'hiring hiring hiring', start_ms: 1 },
    ]);
    const items = await ok(t, { q: 'hiring' });
    expect(items.map((i) => i.id)).toEqual([m, thrice, once]);
    expect(items.map((i) => i.rank)).toEqual([...items.map((i) => i.rank)].sort((x, y) => y - x));
  });

  it('should HTML-escape the snippet and mark only the matches', async () => {
    const t = await user();
    const n = await note(t, 'if a < b & "c" > \u0002d then <b>roadmap</b> <img src=x onerror=alert(1)> it\'s');
    const [item] = await ok(t, { q: 'roadmap' });
    expect(item).toMatchObject({ kind: 'note', id: n, meeting_id: null });
    // <b> is dropped by ts_headline's parser; the unquoted <img ...> is not a tag to it, so only the escaping keeps it inert.
    expect(item.snippet).toBe(
      'if a &lt; b &amp; &quot;c&quot; &gt; d then  <mark>roadmap</mark>  &lt;img src=x onerror=alert(1)&gt; it&#39;s',
    );
  });

  it('should filter by meeting_id, person_id and from/to', async () => {
    const t = await user();
    const ada = await person(t, 'Ada');
    const early = await meeting(t, 'launch early', '2026-01-10T10:00:00.000Z');
    const late = await meeting(t, 'launch late', '2026-03-10T10:00:00.000Z');
    const [adaSeg, otherSeg] = await segments(t, early, [
      { text: 'launch date is fixed', start_ms: 0, person_id: ada },
      { text: 'launch slipped', start_ms: 1 },
    ]);
    const [lateSeg] = await segments(t, late, [{ text: 'launch went well', start_ms: 0 }]);
    const aboutAda = await note(t, 'Ada owns the launch', { type: 'PERSON', id: ada });
    const loose = await note(t, 'launch checklist');
    const tpLate = await talkingPoint(late, 'launch retro');
    expect((await api.request('PUT', `/meetings/${early}/attendees/${ada}`, { token: t })).status).toBe(204);
    const ids = async (query: Record<string, string>) =>
      (await ok(t, { q: 'launch', ...query })).map((i) => i.id).sort();

    expect(await ids({ meeting_id: late })).toEqual([late, lateSeg, tpLate].sort());
    // Ada: her segment, the note about her, the title of the meeting she attends.
    expect(await ids({ person_id: ada })).toEqual([adaSeg, aboutAda, early].sort());
    // Meeting items by the meeting's start_time; the loose notes by their created_at (now).
    expect(await ids({ to: '2026-02-01T00:00:00Z' })).toEqual([early, adaSeg, otherSeg].sort());
    expect(await ids({ from: '2026-02-01T00:00:00Z', to: '2026-04-01T00:00:00Z' })).toEqual(
      [late, lateSeg, tpLate].sort(),
    );
    expect(await ids({ from: '2026-03-10T10:00:00Z' })).toEqual([late, lateSeg, tpLate, aboutAda, loose].sort());
    expect(await ids({ from: '2026-03-10T10:00:00.001Z' })).toEqual([aboutAda, loose].sort());
    expect(await ids({ meeting_id: early, person_id: ada })).toEqual([adaSeg, early].sort());
  });

  it('should page through ties and all kinds without duplicates or gaps, in the order of one big page', async () => {
    const t = await user();
    const m = await meeting(t, 'forecast');
    // Identical texts rank equally: the (kind, id) tie-break must keep the pages apart.
    await segments(
      t,
      m,
      Array.from({ length: 23 }, (_, i) => ({ text: i % 3 ? 'forecast numbers' : 'forecast forecast', start_ms: i })),
    );
    for (let i = 0; i < 4; i++) await note(t, 'forecast numbers');
    for (let i = 0; i < 3; i++) await talkingPoint(m, 'forecast numbers');
    const whole = await ok(t, { q: 'forecast', limit: 200 });
    expect(whole).toHaveLength(31);
    for (const limit of [1, 7, 30]) {
      const { items, pages } = await allPages(t, { q: 'forecast', limit });
      expect(pages).toBe(Math.ceil(31 / limit));
      expect(items.map((i) => i.id)).toEqual(whole.map((i) => i.id));
    }
    const first = await search(t, { q: 'forecast', limit: 31 });
    expect(first.body.next_cursor).toBeNull();
  });

  it('should sort=recent: newest meeting first, then its title, segments by start_ms, notes and talking points', async () => {
    const t = await user();
    const old = await meeting(t, 'plan old', '2026-01-01T09:00:00.000Z');
    const recent = await meeting(t, 'plan new', '2026-05-01T09:00:00.000Z');
    // Listed back by start_ms.
    const [early, late] = await segments(t, recent, [
      { text: 'plan late plan plan plan', start_ms: 9000 },
      { text: 'plan early', start_ms: 1000 },
    ]);
    const [oldSeg] = await segments(t, old, [{ text: 'plan plan plan plan plan', start_ms: 0 }]);
    const tp = await talkingPoint(recent, 'plan agreed');
    const aboutOld = await note(t, 'plan of the old meeting', { type: 'MEETING', id: old });
    // A loose note is dated by its created_at (now): newer than both meetings.
    const loose = await note(t, 'plan for later');
    const items = await ok(t, { q: 'plan', sort: 'recent' });
    expect(items.map((i) => i.id)).toEqual([loose, recent, early, late, tp, old, oldSeg, aboutOld]);
    expect(items.map((i) => i.start_time).slice(1)).toEqual([
      ...Array(4).fill('2026-05-01T09:00:00.000Z'),
      ...Array(3).fill('2026-01-01T09:00:00.000Z'),
    ]);
    expect(Date.parse(items[0].start_time)).toBeGreaterThan(Date.parse('2026-11-01T00:00:00Z'));
    // Each item is still ranked for the query, and relevance (the default) orders by it.
    for (const i of items) expect(i.rank).toBeGreaterThan(0);
    const best = await ok(t, { q: 'plan' });
    expect(best.map((i) => i.id).sort()).toEqual(items.map((i) => i.id).sort());
    expect(best.map((i) => i.rank)).toEqual([...best.map((i) => i.rank)].sort((x, y) => y - x));
    expect(await ok(t, { q: 'plan', sort: 'relevance' })).toEqual(best);
  });

  it('should page sort=recent through equal times and all kinds without duplicates or gaps', async () => {
    const t = await user();
    // Two meetings at the same time, segments at equal start_ms: the (meeting, position, kind, id) tie-breaks keep pages apart.
    const a = await meeting(t, 'rollout', '2026-04-01T09:00:00.000Z');
    const b = await meeting(t, 'rollout', '2026-04-01T09:00:00.000Z');
    for (const m of [a, b])
      await segments(
        t,
        m,
        Array.from({ length: 9 }, (_, i) => ({ text: 'rollout steps', start_ms: i % 3 })),
      );
    for (let i = 0; i < 3; i++) await note(t, 'rollout notes', { type: 'MEETING', id: a });
    for (let i = 0; i < 2; i++) await talkingPoint(b, 'rollout date');
    for (let i = 0; i < 2; i++) await note(t, 'rollout loose');
    const whole = await ok(t, { q: 'rollout', sort: 'recent', limit: 200 });
    expect(whole).toHaveLength(27);
    expect(new Set(whole.map((i) => i.id)).size).toBe(27);
    for (const limit of [1, 4, 26]) {
      const { items, pages } = await allPages(t, { q: 'rollout', sort: 'recent', limit });
      expect(pages).toBe(Math.ceil(27 / limit));
      expect(items.map((i) => i.id)).toEqual(whole.map((i) => i.id));
    }
  });

  it("should never return another user's items, even given their meeting or person id", async () => {
    const alice = await user();
    const bob = await user();
    const bobMeeting = await meeting(bob, 'secret merger');
    const bobPerson = await person(bob, 'Mallory');
    await segments(bob, bobMeeting, [{ text: 'secret merger terms', start_ms: 0, person_id: bobPerson }]);
    await note(bob, 'secret merger notes', { type: 'MEETING', id: bobMeeting });
    await talkingPoint(bobMeeting, 'secret merger');
    const aliceMeeting = await meeting(alice, 'secret santa');
    expect((await ok(alice, { q: 'secret' })).map((i) => i.id)).toEqual([aliceMeeting]);
    expect(await ok(alice, { q: 'merger' })).toEqual([]);
    expect(await ok(alice, { q: 'secret', meeting_id: bobMeeting })).toEqual([]);
    expect(await ok(alice, { q: 'secret', person_id: bobPerson })).toEqual([]);
    expect((await ok(bob, { q: 'secret' })).length).toBe(4);
  });

  it('should leave out a soft-deleted meeting with its segments, talking points and notes', async () => {
    const t = await user();
    const gone = await meeting(t, 'offsite planning');
    const kept = await meeting(t, 'offsite budget');
    await segments(t, gone, [{ text: 'offsite venue', start_ms: 0 }]);
    await talkingPoint(gone, 'offsite venue');
    await note(t, 'offsite food', { type: 'MEETING', id: gone });
    const loose = await note(t, 'offsite ideas');
    expect(await ok(t, { q: 'offsite' })).toHaveLength(6);
    expect((await api.request('DELETE', `/meetings/${gone}`, { token: t })).status).toBe(204);
    expect((await ok(t, { q: 'offsite' })).map((i) => i.id).sort()).toEqual([kept, loose].sort());
    expect(await ok(t, { q: 'offsite', meeting_id: gone })).toEqual([]);
  });

  it('should leave out a deleted talking point', async () => {
    const t = await user();
    const m = await meeting(t, 'm');
    const tp = await talkingPoint(m, 'pricing change');
    expect((await ok(t, { q: 'pricing' })).map((i) => i.id)).toEqual([tp]);
    expect((await api.request('DELETE', `/talking-points/${tp}`, { token: t })).status).toBe(204);
    expect(await ok(t, { q: 'pricing' })).toEqual([]);
  });
});

describe('GET /search errors', () => {
  it('should answer 422 to a missing, empty or too long q and to bad limits, ids and times', async () => {
    const t = await user();
    const cases: Record<string, string | number>[] = [
      {},
      { q: '' },
      { q: '   ' },
      { q: 'x'.repeat(201) },
      { q: 'a', limit: 0 },
      { q: 'a', limit: 201 },
      { q: 'a', limit: 'ten' },
      { q: 'a', limit: 1.5 },
      { q: 'a', meeting_id: 'nope' },
      { q: 'a', person_id: '123' },
      { q: 'a', from: 'yesterday' },
      { q: 'a', to: '2026-13-01T00:00:00Z' },
      { q: 'a', sort: 'newest' },
      { q: 'a', sort: '' },
    ];
    for (const query of cases) {
      const res = await search(t, query);
      expect(res.status, JSON.stringify(query)).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ status: 422, errors: expect.any(Array) });
    }
  });

  it('should answer 400 invalid_cursor to a cursor it did not make', async () => {
    const t = await user();
    const forged = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
    for (const cursor of [
      'garbage',
      forged([1, 'segment']),
      forged(['x', 'segment', randomUUID()]),
      forged([0.5, 'user', randomUUID()]),
      forged([0.5, 'note', 'not-a-uuid']),
    ]) {
      const res = await search(t, { q: 'a', cursor });
      expect(res.status, cursor).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.type).toMatch(/\/invalid_cursor$/);
    }
  });

  it('should answer 400 invalid_cursor to a cursor of another user, q, filter or sort, and take it with another limit', async () => {
    const t = await user();
    const other = await user();
    const m = await meeting(t, 'quota', '2026-02-01T09:00:00.000Z');
    await segments(
      t,
      m,
      Array.from({ length: 5 }, (_, i) => ({ text: 'quota review', start_ms: i })),
    );
    for (const sort of ['relevance', 'recent']) {
      const query = { q: 'quota', sort, limit: 2 };
      const first = await search(t, query);
      expect(first.status, first.text).toBe(200);
      const cursor = first.body.next_cursor!;
      expect(cursor).toEqual(expect.any(String));
      // The same query, another limit: the next items.
      const next = await ok(t, { ...query, limit: 10, cursor });
      expect(next.map((i) => i.id)).toEqual((await ok(t, { ...query, limit: 10 })).slice(2).map((i) => i.id));
      const elsewhere: [string, Record<string, string | number>][] = [
        [other, query],
        [t, { ...query, q: 'review' }],
        [t, { ...query, sort: sort === 'recent' ? 'relevance' : 'recent' }],
        [t, { ...query, meeting_id: m }],
        [t, { ...query, person_id: randomUUID() }],
        [t, { ...query, from: '2026-01-01T00:00:00Z' }],
        [t, { ...query, to: '2027-01-01T00:00:00Z' }],
      ];
      for (const [token, q] of elsewhere) {
        const res = await search(token, { ...q, cursor });
        expect(res.status, JSON.stringify(q)).toBe(400);
        expect(res.body).toMatchObject({ status: 400, type: expect.stringMatching(/\/invalid_cursor$/) });
      }
    }
  });

  it('should answer 401 without a token and 403 to the service token', async () => {
    expect((await api.request('GET', '/search?q=a')).status).toBe(401);
    expect((await search(svc, { q: 'a' })).status).toBe(403);
  });

  it('should take any text as a query without a server error', async () => {
    const t = await user();
    const m = await meeting(t, 'm');
    await segments(t, m, [{ text: "it's O'Brien's (draft) plan: 50% & more!", start_ms: 0 }]);
    for (const q of [
      "'",
      '"',
      '"unclosed',
      '-',
      'or',
      '!!',
      '&|:*()',
      "o'brien",
      '\\',
      '日本語',
      '😀 plan',
      'a:*',
      'plan <-> draft',
    ]) {
      const res = await search(t, { q });
      expect(res.status, `${q}: ${res.text}`).toBe(200);
    }
    expect((await ok(t, { q: "o'brien" })).length).toBe(1);
  });
});
