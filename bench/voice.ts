// `npm run bench:voice`: voice matches over 100,000 people of one user on the test engine
// (native PostgreSQL + pgvector when installed), for two data sets: uniform random unit vectors
// (the worst case: no structure for the graph to exploit) and clustered ones (2,000 speakers'
// centres plus noise, closer to real speaker embeddings). Per data set: recall@10 against the
// exact answer and latency p50/p99 for each hnsw.ef_search, the serial exact scan (the
// baseline), and the service's own plan (lib/repositories/voice.ts) at its configured settings. The
// baseline and the service alternate query by query, so their ratio shares the machine's noise.
// Then GET /meetings/{id}/speaker-labels' suggestions (lib/repositories/speaker-label-list.ts): a meeting
// of 8 unassigned labels, each a few utterances of a known speaker, against the same work done by
// exact scans. BENCH_DATA_SETS=clustered runs one data set (the uniform index takes ~25 min).
import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { loadConfig } from '@mi/lib/config';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { MAX_SUGGESTIONS, listSpeakerLabels } from '@mi/lib/repositories/speaker-label-list';
import {
  EXACT_SETTINGS_SQL,
  VOICE_MATCH_SQL,
  WALK_SETTINGS_SQL,
  findVoiceMatches,
  voiceSearchSettings,
} from '@mi/lib/repositories/voice';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';
import { serverCpuClock, timedWith, type Sample } from './server-cpu';

const PEOPLE = Number(process.env.BENCH_PEOPLE ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
/** Meetings listed per data set, and the labels (and utterances per label) of each. */
const MEETINGS = Number(process.env.BENCH_MEETINGS ?? 100);
const LABELS = 8;
const UTTERANCES = 4;
const EF_SEARCH = [40, 100, 200, 400, 1000];
const DIM = 192;

const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const db = createDatabase(database.url, { max: 2 });
const config = loadConfig({
  APP_ENV: 'test',
  SERVICE_AUTH_TOKEN: 'bench-service-token-0123456789',
  IDENTITY_SECRET_KEY: 'bench-identity-secret-0123456789',
});
const settings = voiceSearchSettings(config);
const suggestSettings = { ...settings, minSimilarity: config.VOICE_SUGGEST_MIN_SIMILARITY };

// Seeded, so every run measures the same vectors.
let state = 20261124;
const random = () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32;
const gaussian = () => Math.sqrt(-2 * Math.log(random() || 1e-12)) * Math.cos(2 * Math.PI * random());
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const randomUnit = () => unit(Array.from({ length: DIM }, gaussian));
// Noise per dimension such that a speaker's embeddings sit ~0.8 cosine from their centre.
const NOISE = 0.75 / Math.sqrt(DIM);
const near = (centre: number[], scale = NOISE) => unit(centre.map((x) => x + gaussian() * scale));

const DATA_SETS: Record<string, () => number[][]> = {
  uniform: () => Array.from({ length: PEOPLE }, randomUnit),
  clustered: () => {
    const centres = Array.from({ length: 2000 }, randomUnit);
    return Array.from({ length: PEOPLE }, (_, i) => near(centres[i % centres.length]));
  },
};

const cpuClock = await serverCpuClock(engine.engine, db);
const timed = timedWith(cpuClock);

async function load(userId: string, vectors: number[][]): Promise<{ loadMs: number; buildMs: number }> {
  const [, { wall: loadMs }] = await timed(async () => {
    await db.query('bench.clear', 'DELETE FROM person'); // the other data set's people too
    const { rows } = await db.query<{ def: string }>(
      'bench.hnsw_def',
      `SELECT pg_get_indexdef('person_voice_vector_idx'::regclass) AS def`,
    );
    (load as { def?: string }).def ??= rows[0].def;
    await db.query('bench.drop_hnsw', 'DROP INDEX IF EXISTS person_voice_vector_idx');
    for (let offset = 0; offset < vectors.length; offset += 5000) {
      await db.query(
        'bench.people',
        `INSERT INTO person (user_id, display_name, voice_vector, voice_model_status, voice_sample_count)
         SELECT $1, 'p' || ($2::int + n), v::vector, 'ready', 1 FROM unnest($3::text[]) WITH ORDINALITY AS t(v, n)`,
        [userId, offset, vectors.slice(offset, offset + 5000).map((v) => pgvector.toSql(v))],
      );
    }
  });
  // The graph must fit in maintenance_work_mem, or the build goes to disk; both cores build it.
  const [, { wall: buildMs }] = await timed(() =>
    db.withTransaction(async (tx) => {
      await tx.query('bench.build_memory', `SET LOCAL maintenance_work_mem = '2GB'`);
      await tx.query('bench.build_workers', 'SET LOCAL max_parallel_maintenance_workers = 1');
      await tx.query('bench.create_hnsw', (load as { def?: string }).def!);
    }),
  );
  await db.query('bench.analyze', 'ANALYZE person');
  return { loadMs, buildMs };
}

async function topK(q: Database, sqlSettings: string[], userId: string, query: string, limit = 10): Promise<string[]> {
  return q.withTransaction(async (tx) => {
    for (const s of sqlSettings) await tx.query('bench.set', s);
    const { rows } = await tx.query<{ id: string }>(
      'bench.knn',
      `SELECT id FROM person WHERE user_id = $1 AND voice_vector IS NOT NULL
       ORDER BY voice_vector <=> $2::vector LIMIT $3`,
      [userId, query, limit],
    );
    return rows.map((r) => r.id);
  });
}

/** Meetings of the user, each with LABELS unassigned labels of UTTERANCES embeddings near a known speaker's. */
async function labelledMeetings(userId: string, vectors: number[][]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < MEETINGS; i++) {
    const { rows: m } = await db.query<{ id: string }>(
      'bench.meeting',
      `INSERT INTO meeting (user_id, title, source_type, start_time)
       VALUES ($1, 'bench', 'recording', now()) RETURNING id`,
      [userId],
    );
    const { rows: t } = await db.query<{ id: string }>(
      'bench.transcription',
      `INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`,
      [m[0].id],
    );
    const segs = Array.from({ length: LABELS }, (_, l) => {
      const speaker = vectors[Math.floor(random() * vectors.length)];
      const utterance = () => ({ label: `SPEAKER_${l}`, v: pgvector.toSql(near(speaker, NOISE / 2)) });
      return Array.from({ length: UTTERANCES }, utterance);
    }).flat();
    await db.query(
      'bench.segments',
      `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms, feature_vector)
       SELECT $1, l, 'x', o, v::vector FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(l, v, o)`,
      [t[0].id, segs.map((x) => x.label), segs.map((x) => x.v)],
    );
    ids.push(m[0].id);
  }
  await db.query('bench.analyze_segments', 'ANALYZE transcript_segment');
  return ids;
}

/** The baseline of the suggestions: the labels' voices, then each one's neighbours by the exact scan. */
async function exactSuggestions(userId: string, meetingId: string): Promise<void> {
  const { rows } = await db.query<{ voice: string }>(
    'bench.label_voices',
    `SELECT avg(l2_normalize(s.feature_vector))::text AS voice
     FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id
     WHERE t.meeting_id = $1 GROUP BY s.speaker_label`,
    [meetingId],
  );
  for (const { voice } of rows) await topK(db, [EXACT_SETTINGS_SQL], userId, voice, MAX_SUGGESTIONS);
}

const rows: Row[] = [];
const suggestionRows: Row[] = [];
const notes: string[] = [];
const chosen = process.env.BENCH_DATA_SETS?.split(',') ?? Object.keys(DATA_SETS);
for (const [name, make] of Object.entries(DATA_SETS).filter(([n]) => chosen.includes(n))) {
  // A user per data set: the service remembers per user whether the walk serves them.
  const { rows: users } = await db.query<{ id: string }>(
    'bench.user',
    `INSERT INTO app_user (username, email) VALUES ($1, $2) RETURNING id`,
    [name, `${randomUUID()}@bench.invalid`],
  );
  const userId = users[0].id;
  const vectors = make();
  const { loadMs, buildMs } = await load(userId, vectors);
  console.log(
    `${name}: loading took ${(loadMs / 1000).toFixed(1)} s, building the HNSW index ${(buildMs / 1000).toFixed(1)} s`,
  );
  // A query is a new utterance of a known speaker: one of the vectors plus a little noise.
  const queries = Array.from({ length: QUERIES }, () =>
    pgvector.toSql(near(vectors[Math.floor(random() * vectors.length)], NOISE / 2)),
  );

  const baseline: Sample[] = [];
  const service: Sample[] = [];
  const truth: string[][] = [];
  const served: string[][] = [];
  for (const [i, q] of queries.entries()) {
    const exact = async () => {
      const [ids, t] = await timed(() =>
        topK(db, ['SET LOCAL enable_indexscan = off', 'SET LOCAL max_parallel_workers_per_gather = 0'], userId, q),
      );
      truth.push(ids);
      baseline.push(t);
    };
    // The service's plan, as POST /people/voice-matches runs it.
    const serve = async () => {
      const [matches, t] = await timed(() =>
        findVoiceMatches(db, userId, pgvector.fromSql(q) as number[], 10, settings),
      );
      served.push(matches.map((m) => m.person.id));
      service.push(t);
    };
    // Which runs first alternates, so neither always finds the other's warm caches.
    if (i % 2) await serve().then(exact);
    else await exact().then(serve);
  }
  const stat = (samples: Sample[], key: keyof Sample, p: number) =>
    percentile(
      samples.map((s) => s[key]),
      p,
    );
  const ratio = (samples: Sample[], key: keyof Sample) =>
    `${(stat(samples, key, 50) / stat(baseline, key, 50)).toFixed(2)} / ${(stat(samples, key, 99) / stat(baseline, key, 99)).toFixed(2)}`;
  const cpu = (samples: Sample[], p: number) => (cpuClock ? ms(stat(samples, 'cpu', p)) : 'n/a');
  const row = (plan: string, recall: string, samples: Sample[]): Row => ({
    'data set': name,
    plan,
    'recall@10': recall,
    'server CPU p50': cpu(samples, 50),
    'server CPU p99': cpu(samples, 99),
    'ratio to exact, CPU p50 / p99': cpuClock ? ratio(samples, 'cpu') : 'n/a',
  });
  const recallOf = (results: string[][]) =>
    results.reduce((s, ids, i) => s + ids.filter((id) => truth[i].includes(id)).length, 0) / (queries.length * 10);
  rows.push(row('exact scan (serial)', '1.000', baseline));

  for (const ef of EF_SEARCH) {
    const samples: Sample[] = [];
    const results: string[][] = [];
    for (const q of queries) {
      const [ids, t] = await timed(() =>
        topK(db, [`SET LOCAL hnsw.ef_search = ${ef}`, `SET LOCAL hnsw.iterative_scan = strict_order`], userId, q),
      );
      results.push(ids);
      samples.push(t);
    }
    rows.push(row(`HNSW ef_search ${ef}`, recallOf(results).toFixed(3), samples));
  }
  rows.push(
    row(
      `**service** (ef_search ${settings.efSearch}, exact below similarity ${settings.exactBelowSimilarity})`,
      recallOf(served).toFixed(3),
      service,
    ),
  );

  // GET /meetings/{id}/speaker-labels, alternating with its exact-scan baseline meeting by meeting.
  const meetings = await labelledMeetings(userId, vectors);
  const listed: Sample[] = [];
  const exactListed: Sample[] = [];
  let suggested = 0;
  for (const [i, m] of meetings.entries()) {
    const serve = async () => {
      const [labels, t] = await timed(() => listSpeakerLabels(db, userId, m, suggestSettings));
      suggested += labels.filter((l) => l.suggestions.length).length;
      listed.push(t);
    };
    const exact = async () => exactListed.push((await timed(() => exactSuggestions(userId, m)))[1]);
    if (i % 2) await serve().then(exact);
    else await exact().then(serve);
  }
  const suggestionRow = (plan: string, samples: Sample[], base: Sample[]): Row => ({
    'data set': name,
    plan,
    'server CPU p50': cpu(samples, 50),
    'server CPU p99': cpu(samples, 99),
    'ratio to exact, CPU p50 / p99': cpuClock
      ? [50, 99].map((p) => (stat(samples, 'cpu', p) / stat(base, 'cpu', p)).toFixed(2)).join(' / ')
      : 'n/a',
  });
  suggestionRows.push(suggestionRow(`exact scans (serial), ${LABELS} labels`, exactListed, exactListed));
  const servicePlan = `**service** (${LABELS} labels, up to ${MAX_SUGGESTIONS} suggestions each)`;
  suggestionRows.push(suggestionRow(servicePlan, listed, exactListed));
  notes.push(`${name}: ${suggested} of ${meetings.length * LABELS} labels got suggestions.`);

  // The planner's choices for the service's statement at this size (test/voice-plans.test.ts
  // asserts them on a small table): the walk on the HNSW index, the exact scan sorting ids only.
  const explain = (settingsSql: string, params: unknown[]) =>
    db.withTransaction(async (tx) => {
      await tx.query('bench.explain_settings', settingsSql, params);
      const { rows: plan } = await tx.query('bench.explain', `EXPLAIN (VERBOSE, COSTS OFF) ${VOICE_MATCH_SQL}`, [
        userId,
        queries[0],
        10,
      ]);
      return plan.map((r) => r['QUERY PLAN'] as string).join('\n');
    });
  const walkPlan = await explain(WALK_SETTINGS_SQL, [String(settings.efSearch)]);
  const exactPlan = await explain(EXACT_SETTINGS_SQL, []);
  const sortOutput = exactPlan.match(/-> {2}Sort\n\s+Output: ([^\n]*)/)?.[1] ?? '';
  notes.push(
    `${name}: the walk ${/Index Scan using person_voice_vector_idx/.test(walkPlan) ? 'uses the HNSW index' : '**does not use the HNSW index**'}; the exact plan: ${exactPlan.match(/Seq Scan/g)?.length ?? 0} sequential scan(s), sorting ${/display_name/.test(sortOutput) ? '**the person columns**' : 'ids and distances only'}.`,
  );
}

const out = `Engine: ${engine.engine.label}. ${PEOPLE.toLocaleString('en')} people of one user, ${QUERIES} queries per row, HNSW m = 32, ef_construction = 200. Server CPU: the database processes' (/proc schedstat). Method: bench/voice.ts.

${table(rows)}

${notes.join(' ')} Targets: clustered p99 ≤ 20 ms at recall@10 ≥ 0.99; uniform recall@10 ≥ 0.99 at no more than the exact scan's cost.`;
const suggestionsOut = [
  `Engine: ${engine.engine.label}. ${MEETINGS} meetings of ${LABELS} unassigned labels against the same work by serial exact scans (${MAX_SUGGESTIONS} nearest people per label). Method: bench/voice.ts.`,
  '',
  table(suggestionRows),
  '',
  'Target: clustered server CPU p99 ≤ 50 ms for the 8 labels.',
].join('\n');
console.log(out);
console.log(suggestionsOut);
// A run of some data sets only leaves the full voice-match table as it was.
if (chosen.length === Object.keys(DATA_SETS).length) writeSection('Voice matches', out);
writeSection('Speaker-label suggestions', suggestionsOut);
await db.close();
await database.close();
await engine.stop();
