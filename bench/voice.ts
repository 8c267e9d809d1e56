// `npm run bench:voice`: voice matches over 100,000 people of one user on the test engine
// (native PostgreSQL + pgvector when installed), for two data sets: uniform random unit vectors
// (the worst case: no structure for the graph to exploit) and clustered ones (2,000 speakers'
// centres plus noise, closer to real speaker embeddings). Per data set: recall@10 against the
// exact answer and latency p50/p99 for each hnsw.ef_search, the serial exact scan (the
// baseline), and the service's own plan (lib/domain/voice.ts) at its configured settings.
import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { loadConfig } from '@mi/lib/config';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { findVoiceMatches, voiceSearchSettings } from '@mi/lib/domain/voice';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';

const PEOPLE = Number(process.env.BENCH_PEOPLE ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const EF_SEARCH = [40, 100, 200, 400, 1000];
const DIM = 192;

const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const db = createDatabase(database.url, { max: 2 });
const settings = voiceSearchSettings(loadConfig({ APP_ENV: 'test', SERVICE_AUTH_TOKEN: 'bench-service-token-0123456789', IDENTITY_SECRET_KEY: 'bench-identity-secret-0123456789' }));

// Seeded, so every run measures the same vectors.
let state = 20261124;
const random = () => ((state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32);
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

const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t = performance.now();
  const out = await fn();
  return [out, performance.now() - t];
};

async function load(userId: string, vectors: number[][]): Promise<{ loadMs: number; buildMs: number }> {
  const [, loadMs] = await timed(async () => {
    await db.query('bench.clear', 'DELETE FROM person'); // the other data set's people too
    const { rows } = await db.query<{ def: string }>('bench.hnsw_def', `SELECT pg_get_indexdef('person_voice_vector_idx'::regclass) AS def`);
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
  const [, buildMs] = await timed(() =>
    db.withTransaction(async (tx) => {
      await tx.query('bench.build_memory', `SET LOCAL maintenance_work_mem = '2GB'`);
      await tx.query('bench.build_workers', 'SET LOCAL max_parallel_maintenance_workers = 1');
      await tx.query('bench.create_hnsw', (load as { def?: string }).def!);
    }),
  );
  await db.query('bench.analyze', 'ANALYZE person');
  return { loadMs, buildMs };
}

async function topK(q: Database, sqlSettings: string[], userId: string, query: string): Promise<string[]> {
  return q.withTransaction(async (tx) => {
    for (const s of sqlSettings) await tx.query('bench.set', s);
    const { rows } = await tx.query<{ id: string }>(
      'bench.knn',
      'SELECT id FROM person WHERE user_id = $1 AND voice_vector IS NOT NULL ORDER BY voice_vector <=> $2::vector LIMIT 10',
      [userId, query],
    );
    return rows.map((r) => r.id);
  });
}

const rows: Row[] = [];
const notes: string[] = [];
for (const [name, make] of Object.entries(DATA_SETS)) {
  // A user per data set: the service remembers per user whether the walk serves them.
  const { rows: users } = await db.query<{ id: string }>('bench.user', `INSERT INTO app_user (username, email) VALUES ($1, $2) RETURNING id`, [name, `${randomUUID()}@bench.invalid`]);
  const userId = users[0].id;
  const vectors = make();
  const { loadMs, buildMs } = await load(userId, vectors);
  notes.push(`${name}: loading ${PEOPLE.toLocaleString('en')} people took ${(loadMs / 1000).toFixed(1)} s, building the HNSW index ${(buildMs / 1000).toFixed(1)} s.`);
  // A query is a new utterance of a known speaker: one of the vectors plus a little noise.
  const queries = Array.from({ length: QUERIES }, () => pgvector.toSql(near(vectors[Math.floor(random() * vectors.length)], NOISE / 2)));

  const exactTimes: number[] = [];
  const truth: string[][] = [];
  for (const q of queries) {
    const [ids, t] = await timed(() => topK(db, ['SET LOCAL enable_indexscan = off', 'SET LOCAL max_parallel_workers_per_gather = 0'], userId, q));
    truth.push(ids);
    exactTimes.push(t);
  }
  const exactP50 = percentile(exactTimes, 50);
  rows.push({ 'data set': name, plan: 'exact scan (serial)', 'recall@10': '1.000', p50: ms(exactP50), p99: ms(percentile(exactTimes, 99)), 'ratio (p50 / exact)': '1.00' });
  const recallOf = (results: string[][]) => results.reduce((s, ids, i) => s + ids.filter((id) => truth[i].includes(id)).length, 0) / (queries.length * 10);

  for (const ef of EF_SEARCH) {
    const times: number[] = [];
    const results: string[][] = [];
    for (const q of queries) {
      const [ids, t] = await timed(() => topK(db, [`SET LOCAL hnsw.ef_search = ${ef}`, `SET LOCAL hnsw.iterative_scan = strict_order`], userId, q));
      results.push(ids);
      times.push(t);
    }
    rows.push({ 'data set': name, plan: `HNSW ef_search ${ef}`, 'recall@10': recallOf(results).toFixed(3), p50: ms(percentile(times, 50)), p99: ms(percentile(times, 99)), 'ratio (p50 / exact)': (percentile(times, 50) / exactP50).toFixed(2) });
  }

  // The service's plan, as GET /people/voice-matches runs it.
  const times: number[] = [];
  const results: string[][] = [];
  for (const q of queries) {
    const [matches, t] = await timed(() => findVoiceMatches(db, userId, pgvector.fromSql(q) as number[], 10, settings));
    results.push(matches.map((m) => m.person.id));
    times.push(t);
  }
  rows.push({
    'data set': name,
    plan: `**service** (ef_search ${settings.efSearch}; exact scan below similarity ${settings.exactBelowSimilarity}, then for that user a while)`,
    'recall@10': recallOf(results).toFixed(3),
    p50: ms(percentile(times, 50)),
    p99: ms(percentile(times, 99)),
    'ratio (p50 / exact)': (percentile(times, 50) / exactP50).toFixed(2),
  });
}

const out = `Engine: ${engine.engine.label}. ${PEOPLE.toLocaleString('en')} people of one user, ${QUERIES} queries per row (each a known speaker's vector plus noise), 192 dimensions, HNSW m = 32, ef_construction = 200, iterative scan in strict order. Latency is wall time of the query's transaction from a client on the same machine.

${table(rows)}

${notes.join(' ')} Targets: clustered p99 ≤ 20 ms at recall@10 ≥ 0.99; uniform recall@10 ≥ 0.99 at no more than the exact scan's cost.`;
console.log(out);
writeSection('Voice matches', out);
await db.close();
await database.close();
await engine.stop();
