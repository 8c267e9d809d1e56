// Property (decisions.md section 6, voice provenance): after any sequence of assign, reassign,
// unassign, append (ML-attributed or not), batch replace and person deletion, through the REST
// API, every person's voice_vector is the normalised sum of the normalised embeddings of exactly
// the segments attributed to them (cosine ≥ 0.999999), voice_confidence their mean cosine to it,
// voice_model_status ready with samples and untrained without, and every segment is attributed as
// a plain model of the rules says. Checked after every step.
// `npm test` runs VOICE_FUZZ_SEQUENCES (default 25) sequences; `npm run test:fuzz` 400.
import type { QueryResultRow } from 'pg';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pgvector from 'pgvector';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

const SEQUENCES = Number(process.env.VOICE_FUZZ_SEQUENCES ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const LABELS = ['A', 'B', 'C'];
const MEETINGS = 2;
const PEOPLE = 3;

type Seg = { label: string; vec: number | null; ml: number | null };
type Cmd =
  | { kind: 'assign'; m: number; label: string; p: number }
  | { kind: 'unassign'; m: number; label: string }
  | { kind: 'append'; m: number; segs: Seg[] }
  | { kind: 'replace'; m: number; segs: Seg[] }
  | { kind: 'deletePerson'; p: number };

// Embeddings by seed: varied directions and magnitudes; seed 0 is the zero vector (no sample).
const vector = (seed: number) =>
  seed === 0
    ? Array(192).fill(0)
    : Array.from({ length: 192 }, (_, i) => Math.sin(seed * 12.9898 + i * 78.233) * (1 + (seed % 5)));
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const normalize = (v: number[]) => v.map((x) => x / norm(v));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);

const seg = fc.record({
  label: fc.constantFrom(...LABELS),
  vec: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null, freq: 4 }),
  ml: fc.option(fc.nat(PEOPLE - 1), { nil: null, freq: 2 }),
});
const meetingIx = fc.nat(MEETINGS - 1);
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('assign' as const),
      m: meetingIx,
      label: fc.constantFrom(...LABELS),
      p: fc.nat(PEOPLE - 1),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('unassign' as const), m: meetingIx, label: fc.constantFrom(...LABELS) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      m: meetingIx,
      segs: fc.array(seg, { minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      m: meetingIx,
      segs: fc.array(seg, { maxLength: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deletePerson' as const), p: fc.nat(PEOPLE - 1) }) },
);

let api: ApiHarness;
let alice: string;
let sequences = 0;
let steps = 0;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

const sql = <R extends QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  api.rt.db.query<R>('test.sql', text, params).then((r) => r.rows);
const newPerson = async () =>
  (await api.post(alice, '/people', { display_name: `v-${randomUUID()}` })).body.id as string;

/** The rules as a plain model: where each segment's attribution comes from. */
interface World {
  people: string[];
  meetings: {
    id: string;
    transcription: string;
    labels: Map<string, string>;
    segs: { vec: number | null; label: string; person: string | null }[];
  }[];
}

async function run(cmds: Cmd[]): Promise<void> {
  const w: World = { people: [], meetings: [] };
  for (let i = 0; i < PEOPLE; i++) w.people.push(await newPerson());
  for (let i = 0; i < MEETINGS; i++) {
    const id = await api.meeting(alice, 'recording');
    const transcription = (await api.post(alice, `/meetings/${id}/transcriptions`)).body.id;
    w.meetings.push({ id, transcription, labels: new Map(), segs: [] });
  }
  let at = 0;
  const body = (segs: Seg[]) => ({
    segments: segs.map((s) => ({
      speaker_label: s.label,
      text: 'x',
      start_ms: at++,
      feature_vector: s.vec === null ? null : vector(s.vec),
      person_id: s.ml === null ? null : w.people[s.ml],
    })),
  });
  const attribute = (m: World['meetings'][number], segs: Seg[]) =>
    segs.map((s) => ({
      vec: s.vec,
      label: s.label,
      person: m.labels.get(s.label) ?? (s.ml === null ? null : w.people[s.ml]),
    }));

  for (const c of cmds) {
    steps++;
    const what = JSON.stringify(c);
    if (c.kind === 'assign') {
      const m = w.meetings[c.m];
      const res = await api.request('POST', `/meetings/${m.id}/speaker-labels`, {
        token: alice,
        body: { speaker_label: c.label, person_id: w.people[c.p] },
        headers: { 'idempotency-key': randomUUID() },
      });
      const present = m.segs.some((s) => s.label === c.label);
      expect(res.status, what).toBe(present ? 200 : 422);
      if (present) {
        m.labels.set(c.label, w.people[c.p]);
        for (const s of m.segs) if (s.label === c.label) s.person = w.people[c.p];
      }
    } else if (c.kind === 'unassign') {
      const m = w.meetings[c.m];
      const res = await api.request('DELETE', `/meetings/${m.id}/speaker-labels/${c.label}`, { token: alice });
      expect(res.status, what).toBe(m.labels.has(c.label) ? 204 : 404);
      if (m.labels.delete(c.label)) for (const s of m.segs) if (s.label === c.label) s.person = null;
    } else if (c.kind === 'append' || c.kind === 'replace') {
      const m = w.meetings[c.m];
      const res = await api.request(
        c.kind === 'append' ? 'POST' : 'PUT',
        `/transcriptions/${m.transcription}/segments`,
        { token: api.serviceToken, body: body(c.segs) },
      );
      expect(res.status, `${what}: ${res.text}`).toBe(204);
      m.segs = c.kind === 'append' ? [...m.segs, ...attribute(m, c.segs)] : attribute(m, c.segs);
    } else {
      const gone = w.people[c.p];
      expect((await api.request('DELETE', `/people/${gone}`, { token: alice })).status, what).toBe(204);
      for (const m of w.meetings) {
        for (const [label, p] of m.labels) if (p === gone) m.labels.delete(label);
        for (const s of m.segs) if (s.person === gone) s.person = null;
      }
      w.people[c.p] = await newPerson();
    }
    await check(w, what);
  }
}

async function check(w: World, after: string): Promise<void> {
  // Attribution as the model says (order by start_ms = the model's order).
  for (const m of w.meetings) {
    const rows = await sql('SELECT person_id FROM transcript_segment WHERE transcription_id = $1 ORDER BY start_ms', [
      m.transcription,
    ]);
    expect(
      rows.map((r) => r.person_id),
      `attribution after ${after}`,
    ).toEqual(m.segs.map((s) => s.person));
  }
  const people = await sql<{
    id: string;
    v: string | null;
    voice_confidence: number | null;
    voice_model_status: string;
    voice_sample_count: number;
  }>(
    'SELECT id, voice_vector::text AS v, voice_confidence, voice_model_status, voice_sample_count FROM person WHERE id = ANY($1)',
    [w.people],
  );
  for (const p of people) {
    const mine = w.meetings
      .flatMap((m) => m.segs)
      .filter((s) => s.person === p.id && s.vec !== null && s.vec !== 0)
      .map((s) => normalize(vector(s.vec!)));
    const why = `person ${w.people.indexOf(p.id)} after ${after}`;
    expect(p.voice_sample_count, why).toBe(mine.length);
    expect((await sql('SELECT count(*)::int AS n FROM voice_sample WHERE person_id = $1', [p.id]))[0].n, why).toBe(
      mine.length,
    );
    if (!mine.length) {
      expect([p.v, p.voice_confidence, p.voice_model_status], why).toEqual([null, null, 'untrained']);
      continue;
    }
    const expected = normalize(mine.reduce((s, v) => s.map((x, i) => x + v[i]), Array(192).fill(0)));
    const got = pgvector.fromSql(p.v) as number[];
    expect(p.voice_model_status, why).toBe('ready');
    expect(dot(got, expected) / norm(got), why).toBeGreaterThanOrEqual(0.999999);
    expect(Number(p.voice_confidence), why).toBeCloseTo(
      mine.reduce((s, v) => s + dot(v, expected), 0) / mine.length,
      5,
    );
  }
}

it(
  `should keep every voice model equal to its samples over ${SEQUENCES} random sequences`,
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 12 }), async (cmds) => {
        sequences++;
        await run(cmds);
      }),
      { numRuns: SEQUENCES, seed: SEED },
    );
    console.info(`voice model property: ${sequences} sequences, ${steps} steps (seed ${SEED})`);
  },
  Math.max(120_000, SEQUENCES * 3_000),
);
