// `npm run bench:search`: GET /search's statement (lib/repositories/search.ts, as the route runs it)
// on the test engine (native PostgreSQL when installed) over 1,000,000 transcript segments of
// many users, measured for the one user who holds 100,000 of them. Texts are 12 words drawn
// from a 5,000-word vocabulary with a Zipf-like (log-uniform) law, so a query can hit almost
// every segment of the user (common words) or a handful (rare ones); queries are grouped by how
// common their words are. Baseline, same run: the bare GIN lookup of the same query (the user's
// first 50 matching segments: no rank, no other kinds, no snippets); for scale, ILIKE '%word%'.
// BENCH_EXPLAIN=1 prints the plans of a common-word first page on stdout.
import os from 'node:os';
import { createDatabase } from '@mi/lib/db/pool';
import { HEADLINE_OPTIONS, search, searchSql } from '@mi/lib/repositories/search';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';
import { serverCpuClock, timedWith, type Sample } from './server-cpu';

const SEGMENTS = Number(process.env.BENCH_SEGMENTS ?? 1_000_000);
const USER_SEGMENTS = Number(process.env.BENCH_USER_SEGMENTS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 100);
const PER_MEETING = 500;
const VOCABULARY = 5000;
const WORDS_PER_SEGMENT = 12;

const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
// A long wait for a connection: the load runs minutes on a busy machine.
const db = createDatabase(database.url, { max: 2, connectTimeoutMs: 600_000 });
const cpuClock = await serverCpuClock(engine.engine, db);
const timed = timedWith(cpuClock);

// Seeded, so every run measures the same words and queries (the SQL load uses setseed).
let state = 20261124;
const random = () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32;
// Pseudo-words of consonant + vowel syllables ending in a, o or u: stable under English stemming.
const syllables = ['ba', 'ko', 'mu', 'ta', 'ri', 'no', 'pe', 'lu', 'sa', 'vo', 'di', 'gu', 'fa', 'zo', 'he', 'ju'];
const words = new Set<string>();
while (words.size < VOCABULARY) {
  const n = 2 + Math.floor(random() * 3);
  words.add(
    Array.from({ length: n }, () => syllables[Math.floor(random() * syllables.length)]).join('') +
      ['a', 'o', 'u'][Math.floor(random() * 3)],
  );
}
const vocabulary = [...words];

async function load(): Promise<{ userId: string; meetingId: string; loadMs: number; indexMs: number }> {
  const meetingsOfUser = USER_SEGMENTS / PER_MEETING;
  const otherMeetings = (SEGMENTS - USER_SEGMENTS) / PER_MEETING;
  const others = otherMeetings / 10; // ten meetings per other user
  const [ids, { wall: loadMs }] = await timed(() =>
    db.withTransaction(async (tx) => {
      await tx.query('bench.seed', 'SELECT setseed(0.1124)');
      // Rows consistent by construction: no per-row triggers (foreign keys, the owner and search
      // vector triggers; user_id and the vectors are written directly below) while loading. The
      // vectors come from a derived table (OFFSET 0: not flattened) so that each is of its own text.
      await tx.query('bench.no_triggers', 'SET LOCAL session_replication_role = replica');
      await tx.query('bench.drop_gin', 'DROP INDEX transcript_segment_user_id_text_search_idx');
      const { rows: users } = await tx.query<{ id: string }>(
        'bench.users',
        `INSERT INTO app_user (username, email) SELECT 'bench' || g, 'bench' || g || '@bench.invalid' FROM generate_series(0, $1::int) g ORDER BY g RETURNING id`,
        [others],
      );
      const userId = users[0].id;
      // The user's meetings, then ten per other user; titles of three words.
      await tx.query(
        'bench.meetings',
        `INSERT INTO meeting (user_id, title, title_search, source_type, start_time)
         SELECT uid, title, to_tsvector('english', title), 'recording', timestamptz '2026-01-01' + g * interval '1 hour'
         FROM (SELECT u.id AS uid, g, (SELECT string_agg(($1::text[])[floor(exp(random() * ln($2::int)))::int], ' ') FROM generate_series(1, 3) WHERE g > 0) AS title
               FROM app_user u CROSS JOIN generate_series(1, CASE WHEN u.id = $3 THEN $4::int ELSE 10 END) g OFFSET 0) x`,
        [vocabulary, VOCABULARY, userId, meetingsOfUser],
      );
      await tx.query(
        'bench.transcriptions',
        `INSERT INTO transcription (meeting_id, status) SELECT id, 'completed' FROM meeting`,
      );
      await tx.query(
        'bench.segments',
        `INSERT INTO transcript_segment (transcription_id, user_id, text, text_search, start_ms, end_ms)
         SELECT tid, uid, txt, to_tsvector('english', txt), n * 1000, n * 1000 + 900
         FROM (SELECT t.id AS tid, m.user_id AS uid, n, (SELECT string_agg(($1::text[])[floor(exp(random() * ln($2::int)))::int], ' ') FROM generate_series(1, $3::int) WHERE n > 0) AS txt
               FROM transcription t JOIN meeting m ON m.id = t.meeting_id CROSS JOIN generate_series(1, $4::int) n OFFSET 0) x`,
        [vocabulary, VOCABULARY, WORDS_PER_SEGMENT, PER_MEETING],
      );
      // The user's other kinds: 25 talking points per meeting, 2,000 notes.
      await tx.query(
        'bench.talking_points',
        `INSERT INTO talking_point (meeting_id, content, content_search)
         SELECT mid, c, to_tsvector('english', c)
         FROM (SELECT m.id AS mid, (SELECT string_agg(($1::text[])[floor(exp(random() * ln($2::int)))::int], ' ') FROM generate_series(1, 8) WHERE g > 0) AS c
               FROM meeting m CROSS JOIN generate_series(1, 25) g WHERE m.user_id = $3 OFFSET 0) x`,
        [vocabulary, VOCABULARY, userId],
      );
      await tx.query(
        'bench.notes',
        `INSERT INTO note (user_id, content, content_search)
         SELECT $3, c, to_tsvector('english', c)
         FROM (SELECT (SELECT string_agg(($1::text[])[floor(exp(random() * ln($2::int)))::int], ' ') FROM generate_series(1, 20) WHERE g > 0) AS c
               FROM generate_series(1, 2000) g OFFSET 0) x`,
        [vocabulary, VOCABULARY, userId],
      );
      // A load without vectors would measure empty results (as it once did, silently).
      const { rows: unindexed } = await tx.query<{ n: string | number }>(
        'bench.check_vectors',
        'SELECT count(*) AS n FROM transcript_segment WHERE text_search IS NULL',
      );
      if (Number(unindexed[0].n) !== 0) throw new Error(`${unindexed[0].n} segments loaded without a search vector`);
      const { rows: meetings } = await tx.query<{ id: string }>(
        'bench.a_meeting',
        'SELECT id FROM meeting WHERE user_id = $1 ORDER BY start_time LIMIT 1',
        [userId],
      );
      return { userId, meetingId: meetings[0].id };
    }),
  );
  const [, { wall: indexMs }] = await timed(() =>
    db.withTransaction(async (tx) => {
      await tx.query('bench.index_memory', `SET LOCAL maintenance_work_mem = '1GB'`);
      await tx.query(
        'bench.create_gin',
        'CREATE INDEX transcript_segment_user_id_text_search_idx ON transcript_segment USING gin (user_id, text_search)',
      );
    }),
  );
  await db.query('bench.vacuum', 'VACUUM ANALYZE');
  return { ...ids, loadMs, indexMs };
}

const { userId, meetingId, loadMs, indexMs } = await load();
const { rows: counts } = await db.query<{ segments: string; total: string }>(
  'bench.counts',
  `SELECT (SELECT count(*) FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id WHERE m.user_id = $1) AS segments,
          (SELECT count(*) FROM transcript_segment) AS total`,
  [userId],
);

// Words by how common they are (vocabulary rank under the log-uniform law).
const pick = (from: number, to: number) => vocabulary[from + Math.floor(random() * (to - from))];
const TIERS: Record<string, () => string> = {
  'common word (rank 1-10)': () => pick(0, 10),
  'medium word (rank 50-500)': () => pick(50, 500),
  'rare word (rank 1000-5000)': () => pick(1000, 5000),
  'two medium words (AND)': () => `${pick(50, 500)} ${pick(50, 500)}`,
  'common word, one meeting': () => pick(0, 10),
};

const matchesOf = async (q: string, meeting: string | null) =>
  Number(
    (
      await db.query<{ n: string }>(
        'bench.matches',
        `SELECT count(*) AS n FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
         WHERE m.user_id = $1 AND m.deleted_at IS NULL AND s.text_search @@ websearch_to_tsquery('english', $2) AND ($3::uuid IS NULL OR m.id = $3)`,
        [userId, q, meeting],
      )
    ).rows[0].n,
  );
const bareLookup = (q: string) =>
  db.query(
    'bench.bare',
    `SELECT s.id FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
     WHERE s.user_id = $1 AND s.text_search @@ websearch_to_tsquery('english', $2) AND m.user_id = $1 AND m.deleted_at IS NULL LIMIT 50`,
    [userId, q],
  );

const loadBefore = os.loadavg()[0];
const rows: Row[] = [];
const stat = (samples: Sample[], key: keyof Sample, p: number) =>
  percentile(
    samples.map((s) => s[key]),
    p,
  );
const cpu = (samples: Sample[], p: number) => (cpuClock ? ms(stat(samples, 'cpu', p)) : 'n/a');
const worst = { cpu: 0 };
const SORTS = ['relevance', 'recent'] as const;
const nextPage: Record<string, Sample[]> = {};
for (const [tier, make] of Object.entries(TIERS)) {
  const oneMeeting = tier.endsWith('one meeting');
  const queries = Array.from({ length: QUERIES }, make);
  let matches = 0;
  for (const q of queries.slice(0, 10)) matches += (await matchesOf(q, oneMeeting ? meetingId : null)) / 10;
  const base: Sample[] = [];
  const service: Record<string, Sample[]> = { relevance: [], recent: [] };
  const second: Record<string, Sample[]> = { relevance: [], recent: [] };
  // Query by query: the baseline, then each sort, so all three see the same machine.
  for (const q of queries) {
    if (!oneMeeting) base.push((await timed(() => bareLookup(q)))[1]);
    for (const sort of SORTS) {
      const f = { q, sort, limit: 50, ...(oneMeeting ? { meeting_id: meetingId } : {}) };
      const [page, t] = await timed(() => search(db, userId, f));
      service[sort].push(t);
      if (page.next_cursor && tier.startsWith('common word ('))
        second[sort].push((await timed(() => search(db, userId, { ...f, cursor: page.next_cursor! })))[1]);
    }
  }
  for (const sort of SORTS) {
    if (second[sort].length) nextPage[sort] = second[sort];
    const samples = service[sort];
    worst.cpu = Math.max(worst.cpu, stat(samples, 'cpu', 99));
    const ratio = (key: keyof Sample) => (base.length ? (stat(samples, key, 50) / stat(base, key, 50)).toFixed(2) : '');
    rows.push({
      query: tier,
      sort,
      'user segments matched (mean)': Math.round(matches).toLocaleString('en'),
      'server CPU p50': cpu(samples, 50),
      'server CPU p99': cpu(samples, 99),
      'ratio to baseline, CPU p50': cpuClock ? ratio('cpu') : '',
    });
  }
}

// For scale: the same medium-word query without full-text search (a substring scan of the user's segments).
const ilike: number[] = [];
for (let i = 0; i < 10; i++) {
  const w = pick(50, 500);
  ilike.push(
    (
      await timed(() =>
        db.query(
          'bench.ilike',
          `SELECT s.id FROM transcript_segment s JOIN transcription t ON t.id = s.transcription_id JOIN meeting m ON m.id = t.meeting_id
           WHERE m.user_id = $1 AND s.text ILIKE '%' || $2 || '%' ORDER BY s.id LIMIT 50`,
          [userId, w],
        ),
      )
    )[1].wall,
  );
}

// BENCH_EXPLAIN=1: the plan of one common-word first page of each sort, on stdout only.
if (process.env.BENCH_EXPLAIN) {
  for (const sort of SORTS) {
    const params = [
      userId,
      vocabulary[0],
      null,
      null,
      null,
      null,
      51,
      HEADLINE_OPTIONS,
      ...Array(sort === 'relevance' ? 3 : 5).fill(null),
    ];
    const { rows: plan } = await db.query<{ 'QUERY PLAN': string }>(
      'bench.explain',
      `EXPLAIN (ANALYZE, BUFFERS) ${searchSql(sort)}`,
      params,
    );
    console.log(`sort=${sort}\n${plan.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
}

const loadAfter = os.loadavg()[0];
const out = `Engine: ${engine.engine.label}. ${Number(counts[0].total).toLocaleString('en')} segments; the measured user has ${Number(counts[0].segments).toLocaleString('en')} in ${USER_SEGMENTS / PER_MEETING} meetings. ${QUERIES} queries per row, \`limit\` 50. Server CPU: the database processes' (/proc schedstat); baseline: the bare GIN lookup. Method: bench/search.ts.

${table(rows)}

Second page of a common-word query: ${SORTS.map((sort) => `${sort} server CPU p99 ${cpu(nextPage[sort] ?? [], 99)}`).join(', ')}. ILIKE '%word%' instead, medium words: wall p50 ${ms(percentile(ilike, 50))}. Load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)} on ${os.cpus().length} cores. Targets (server CPU p99): \`recent\` ≤ 50 ms for every row; \`relevance\` ≤ 50 ms for every row matching ≤ 10,000 items, ≤ 100 ms for the commonest words (worst row here: ${cpuClock ? ms(worst.cpu) : 'n/a'}).`;
console.log(`loading ${(loadMs / 1000).toFixed(1)} s, building the GIN index ${(indexMs / 1000).toFixed(1)} s\n${out}`);
writeSection('Search', out);
await db.close();
await database.close();
await engine.stop();
