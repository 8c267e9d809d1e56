// The plans of the voice-match statements the service runs (lib/repositories/voice.ts), on a seeded,
// analysed table: the walk uses the HNSW index, the exact scan one serial scan whose sort carries
// ids and distances only, and both read the winners' person columns by primary key.
import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { EXACT_SETTINGS_SQL, VOICE_MATCH_SQL, WALK_SETTINGS_SQL, findVoiceMatches } from '@mi/lib/repositories/voice';
import { fileDatabase } from './harness';
import type { TestDatabase } from './support/database';

let database: TestDatabase;
let db: Database;
let userId: string;
let vectors: number[][];

let seed = 11;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
// Speakers: 100 centres, 50 embeddings each around them (as bench/voice.ts's clustered set).
// 5,000 people: from about 3,000 on the planner prefers the walk to the exact scan.
const PEOPLE = 5000;
const centres = Array.from({ length: 100 }, () => unit(Array.from({ length: 192 }, rand)));
const near = (c: number[], scale = 0.05) => unit(c.map((x) => x + rand() * scale));

beforeAll(async () => {
  database = await fileDatabase();
  db = createDatabase(database.url, { max: 2 });
  userId = (
    await db.query<{ id: string }>(
      't.user',
      `INSERT INTO app_user (username, email) VALUES ('plans', $1) RETURNING id`,
      [`${randomUUID()}@example.com`],
    )
  ).rows[0].id;
  vectors = Array.from({ length: PEOPLE }, (_, i) => near(centres[i % centres.length]));
  // Building the index over the loaded rows is several times faster than inserting into it.
  const { rows } = await db.query<{ def: string }>(
    't.def',
    `SELECT pg_get_indexdef('person_voice_vector_idx'::regclass) AS def`,
  );
  await db.query('t.drop', 'DROP INDEX person_voice_vector_idx');
  await db.query(
    't.people',
    `INSERT INTO person (user_id, display_name, voice_vector, voice_model_status)
     SELECT $1, 'p' || n, v::vector, 'ready' FROM unnest($2::text[]) WITH ORDINALITY AS t(v, n)`,
    [userId, vectors.map((v) => pgvector.toSql(v))],
  );
  await db.query('t.build', rows[0].def);
  await db.query('t.analyze', 'ANALYZE person');
}, 300_000); // the index build takes a minute or more on PGlite's WebAssembly pgvector
afterAll(async () => {
  await db?.close();
  await database?.close();
});

async function plan(settings: [string, unknown[]], vector: number[]): Promise<string> {
  return db.withTransaction(async (tx) => {
    await tx.query('t.settings', ...settings);
    const { rows } = await tx.query('t.explain', `EXPLAIN (VERBOSE, COSTS OFF) ${VOICE_MATCH_SQL}`, [
      userId,
      pgvector.toSql(vector),
      10,
    ]);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
/** The Output line of the plan's Sort node: what the sort carries per row. */
const sortOutput = (p: string) => p.match(/-> {2}Sort\n\s+Output: ([^\n]*)/)?.[1];

describe('voice-match plans', () => {
  it('should walk the HNSW index, then read the 10 winners by primary key', async () => {
    const p = await plan([WALK_SETTINGS_SQL, ['40']], near(centres[3]));
    expect(p).toMatch(/Index Scan using person_voice_vector_idx on public\.person/);
    expect(p).toMatch(/Index Scan using person_pkey on public\.person/);
    expect(p).not.toMatch(/Seq Scan/);
  });

  it('should scan serially once in the exact plan, sorting ids and distances only', async () => {
    const p = await plan([EXACT_SETTINGS_SQL, []], near(centres[3]));
    expect(p.match(/Seq Scan on public\.person/g)).toHaveLength(1);
    expect(p).not.toMatch(/person_voice_vector_idx|Gather/);
    // The wide person row is not dragged through the sort of every row.
    expect(sortOutput(p)).toMatch(/^person_1\.id, \(\(person_1\.voice_vector <=> /);
    expect(sortOutput(p)).not.toMatch(/display_name/);
    expect(p).toMatch(/Bitmap Index Scan on person_pkey/);
  });

  it('should answer the exact top 10, most similar first, with the person columns', async () => {
    const query = near(centres[42]);
    const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
    const truth = vectors
      .map((v, i) => ({ name: `p${i + 1}`, similarity: cos(query, v) }))
      .sort((a, b) => b.similarity - a.similarity);
    const matches = await findVoiceMatches(db, userId, query, 10, { efSearch: 40, exactBelowSimilarity: 0.4 });
    expect(matches.map((m) => m.person.display_name)).toEqual(truth.slice(0, 10).map((t) => t.name));
    for (const [i, m] of matches.entries()) expect(m.similarity).toBeCloseTo(truth[i].similarity, 5);
    expect(matches[0].person).toMatchObject({ user_id: userId, voice_model_status: 'ready' });
  });
});
