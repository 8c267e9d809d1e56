// `npm run bench:search-vectors`: what keeping transcript_segment.text_search by trigger (today's
// schema.sql) costs against the stored generated column it replaced (round-3), on the test engine
// (native PostgreSQL when installed), in the same run:
// - the hot paths' inserts: PUT of 5,000 segments (replaceSegments) and live segment commits
//   (appendSegments, one final segment per commit), rounds alternating between the two databases;
// - adding the column to BENCH_SEGMENTS existing segments (default 200,000): the generated column
//   rewrites the table under ACCESS EXCLUSIVE, the plain one is added at once and the data step
//   fills it in batches (schema/data-steps.ts) while writers go on.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { appendSegments, replaceSegments, type SegmentInput } from '@mi/lib/repositories/transcript-segments';
import pg from 'pg';
import { DATA_STEP_BATCH, runDataSteps } from '../schema/data-steps';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';
import { serverCpuClock } from './server-cpu';

const SEGMENTS = Number(process.env.BENCH_SEGMENTS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const COMMITS = 200; // live commits per round
const PUT_SIZE = 5_000;

const GENERATED = `text_search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED`;
// round-3's column: generated, with the owner trigger on INSERT only.
const TO_GENERATED = `
  DROP TRIGGER transcript_segment_derive ON transcript_segment;
  CREATE FUNCTION transcript_segment_set_user_id() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    NEW.user_id := (SELECT m.user_id FROM transcription t JOIN meeting m ON m.id = t.meeting_id
                    WHERE t.id = NEW.transcription_id);
    RETURN NEW;
  END $$;
  CREATE TRIGGER transcript_segment_set_user_id BEFORE INSERT ON transcript_segment
    FOR EACH ROW EXECUTE FUNCTION transcript_segment_set_user_id();
  ALTER TABLE transcript_segment DROP COLUMN text_search;
  ALTER TABLE transcript_segment ADD COLUMN ${GENERATED};
  CREATE INDEX transcript_segment_user_id_text_search_idx ON transcript_segment USING gin (user_id, text_search);`;

const WORDS = 'budget hiring plan quarter revenue roadmap launch customer churn pricing design review'.split(' ');
const line = (i: number) =>
  Array.from({ length: 14 }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ') + ` item ${i}`;
const segment = (i: number): SegmentInput => ({
  speaker_label: `S${i % 3}`,
  text: line(i),
  start_ms: i * 1000,
  end_ms: i * 1000 + 900,
});

/** A database of today's schema (or round-3's column) with one user's meeting and transcription. */
async function variant(engine: Awaited<ReturnType<typeof startTestEngine>>['engine'], generated: boolean) {
  const { url } = await createTestDatabase(engine);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  admin.on('error', () => {}); // the engine stopping under it at the end
  if (generated) await admin.query(TO_GENERATED);
  const one = async (sql: string, params: unknown[] = []) => (await admin.query(sql, params)).rows[0].id as string;
  const user = await one(`INSERT INTO app_user (username, email) VALUES ('b', 'b@example.test') RETURNING id`);
  const meeting = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'm', 'upload', now()) RETURNING id`,
    [user],
  );
  const live = await one(
    `INSERT INTO meeting (user_id, title, source_type, start_time) VALUES ($1, 'l', 'recording', now()) RETURNING id`,
    [user],
  );
  const tr = (m: string) =>
    one(`INSERT INTO transcription (meeting_id, status) VALUES ($1, 'completed') RETURNING id`, [m]);
  return { url, admin, db: createDatabase(url, { max: 2 }), put: await tr(meeting), live: await tr(live) };
}

const engine = await startTestEngine();
const cpu = async (db: Database, fn: () => Promise<void>) => timed((await serverCpuClock(engine.engine, db))!, fn);
const timed = async (clock: () => number, fn: () => Promise<void>) => {
  const c0 = clock();
  const t0 = performance.now();
  await fn();
  return { cpu: clock() - c0, wall: performance.now() - t0 };
};
try {
  if (engine.engine.kind !== 'native')
    throw new Error('bench:search-vectors measures server CPU: native PostgreSQL only');
  const variants = { generated: await variant(engine.engine, true), trigger: await variant(engine.engine, false) };
  type Name = keyof typeof variants;
  const samples: Record<string, number[]> = {};
  const push = (key: string, v: number) => (samples[key] ??= []).push(v);
  const put = Array.from({ length: PUT_SIZE }, (_, i) => segment(i));
  let next = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    // Alternating which goes first: the machine's drift falls on both.
    const order: Name[] = round % 2 ? ['trigger', 'generated'] : ['generated', 'trigger'];
    for (const name of order) {
      const v = variants[name];
      const p = await cpu(v.db, () => v.db.withTransaction((tx) => replaceSegments(tx, v.put, put).then(() => {})));
      const start = next;
      const c = await cpu(v.db, async () => {
        for (let i = 0; i < COMMITS; i++) {
          const s = { ...segment(start + i), id: randomUUID() };
          await v.db.withTransaction((tx) => appendSegments(tx, v.live, [s]));
        }
      });
      if (round === 0) continue; // warm-up
      push(`${name} put`, p.cpu);
      push(`${name} commit`, c.cpu / COMMITS);
    }
    next += COMMITS;
  }

  // Adding the column to SEGMENTS existing segments.
  const big = variants.trigger;
  await big.admin.query(
    `INSERT INTO transcript_segment (transcription_id, speaker_label, text, start_ms)
     SELECT $1, 'S' || (g % 3), 'line ' || g || ' on the budget, the hiring plan and the quarter ahead', g
     FROM generate_series(1, $2) g`,
    [big.put, SEGMENTS],
  );
  await big.admin.query('ALTER TABLE transcript_segment DROP COLUMN text_search');
  await big.admin.query('VACUUM ANALYZE transcript_segment');
  // The statements run on this one backend: its own CPU (all the server's children would lose
  // what a process ending meanwhile, an autovacuum worker, had spent).
  const pid = (await big.admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const backend = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  const rewrite = await timed(backend, async () => {
    await big.admin.query(`ALTER TABLE transcript_segment ADD COLUMN ${GENERATED}`);
  });
  await big.admin.query('ALTER TABLE transcript_segment DROP COLUMN text_search');
  await big.admin.query('VACUUM ANALYZE transcript_segment');
  const add = await timed(backend, async () => {
    await big.admin.query('ALTER TABLE transcript_segment ADD COLUMN text_search tsvector');
  });
  let filled = 0;
  const backfill = await timed(backend, async () => {
    filled = (await runDataSteps(big.admin))['transcript_segment.text_search'] ?? 0;
  });
  const batches = Math.ceil(SEGMENTS / DATA_STEP_BATCH);

  const p50 = (key: string) => percentile(samples[key], 50);
  const p50p99 = (key: string) => `${ms(p50(key))} / ${ms(percentile(samples[key], 99))}`;
  const ratio = (what: string) => (p50(`trigger ${what}`) / p50(`generated ${what}`)).toFixed(2);
  const rows: Row[] = [
    {
      measure: `PUT of ${PUT_SIZE.toLocaleString('en')} segments (replaceSegments): server CPU p50 / p99`,
      'generated column (baseline)': p50p99('generated put'),
      trigger: p50p99('trigger put'),
      ratio: ratio('put'),
    },
    {
      measure: 'live segment commit (appendSegments, 1 final segment): server CPU per commit, p50 / p99 of rounds',
      'generated column (baseline)': p50p99('generated commit'),
      trigger: p50p99('trigger commit'),
      ratio: ratio('commit'),
    },
  ];
  const upgrade: Row[] = [
    {
      'adding text_search to existing segments': 'ADD COLUMN … GENERATED ALWAYS AS … STORED (baseline)',
      'ACCESS EXCLUSIVE held': `${ms(rewrite.wall)} (the whole rewrite)`,
      'server CPU': ms(rewrite.cpu),
    },
    {
      'adding text_search to existing segments': `ADD COLUMN … tsvector, then the data step (${batches} batches)`,
      'ACCESS EXCLUSIVE held': `${ms(add.wall)} (the ADD only; a batch locks its ${DATA_STEP_BATCH} rows)`,
      'server CPU':
        `${ms(add.cpu + backfill.cpu)} (${((add.cpu + backfill.cpu) / rewrite.cpu).toFixed(2)}x); ` +
        `${ms(backfill.wall)} wall, ${ms(backfill.wall / batches)} per batch`,
    },
  ];
  const { rows: left } = await big.admin.query(
    'SELECT count(*)::int AS n FROM transcript_segment WHERE text_search IS NULL',
  );
  if (filled < SEGMENTS || left[0].n) throw new Error(`the data step filled ${filled} segments, left ${left[0].n}`);
  const body = [
    `${ROUNDS} rounds alternating; server CPU of the database's processes. ${engine.engine.label}. Method: bench/search-vectors.ts.`,
    '',
    table(rows),
    '',
    `Adding the column to ${SEGMENTS.toLocaleString('en')} existing segments (wall time: the machine is shared):`,
    '',
    table(upgrade),
  ].join('\n');
  console.log(body);
  writeSection('Search vectors: trigger against generated column', body);
  await Promise.all(Object.values(variants).map(async (v) => (await v.db.close(), await v.admin.end())));
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await engine.stop();
}
