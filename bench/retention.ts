// `npm run bench:retention`: the sweep's outbox retention, today's day partitions dropped whole
// against the batched DELETE it replaces (decision 0010), on the same data: BENCH_OUTBOX_ROWS
// events (default 4,000,000) of 1,000 users, a quarter on each of four days (4 and 3 days ago,
// yesterday, today), so that EVENT_RETENTION_HOURS 48 removes half of them. Database A has every
// row in the default partition (where the DELETE runs, as it ran over the plain table); database
// B has the day partitions. Reports wall time, the database server's CPU time and the WAL
// written, on the test engine (native PostgreSQL when installed).
// The manifest has no time retention (a meeting's purge deletes its rows): BENCH_MANIFEST_ROWS rows
// (default a quarter of the events) of 1,000 meetings over four months, the oldest two months'
// meetings purged; A holds them in the default partition (the plain table's one index), B by month,
// where the purge's DELETE probes every month and the sweep then drops the two emptied months.
import { createDatabase, type Database } from '@mi/lib/db/pool';
import { dropEmptyManifestPartitions, ensurePartitions } from '@mi/lib/repositories/partitions';
import { pruneExpired, RETENTION_BATCH_ROWS, RETENTION_MAX_BATCHES } from '@mi/lib/repositories/retention';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, table, writeSection, type Row } from './report';
import { serverCpuClock } from './server-cpu';

const ROWS = Number(process.env.BENCH_OUTBOX_ROWS ?? 2_000_000);
const USERS = 1_000;
const MANIFEST_ROWS = Number(process.env.BENCH_MANIFEST_ROWS ?? ROWS / 4);
const MEETINGS = 1_000;
const DAY_MS = 86_400_000;
const engine = await startTestEngine();
const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
const now = new Date();
/** The middle of the UTC month `n` months before this one. */
const monthAgo = (n: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - n, 15));

async function load(partitioned: boolean) {
  const database = await createTestDatabase(engine.engine);
  const db = createDatabase(database.url, { max: 1 });
  // The template has today's days ahead; A loses them (its rows all go to the default), B gains the past.
  if (partitioned) {
    await ensurePartitions(db, 'event_outbox', new Date(today - 4 * DAY_MS));
    for (const n of [3, 2, 1]) await ensurePartitions(db, 'segment_manifest', monthAgo(n));
  } else
    for (const p of (
      await db.query<{ n: string }>(
        'bench.days',
        `SELECT relname AS n FROM pg_class WHERE relname ~ '^(event_outbox|segment_manifest)_pd' AND relkind = 'r'`,
      )
    ).rows)
      await db.query('bench.drop_day', `DROP TABLE "${p.n}"`);
  await db.query(
    'bench.users',
    `INSERT INTO app_user (username, email) SELECT 'u' || g, 'u' || g || '@bench.invalid' FROM generate_series(1, $1) g`,
    [USERS],
  );
  const perUserDay = Math.floor(ROWS / USERS / 4);
  for (const [i, daysAgo] of [4, 3, 1, 0].entries()) {
    // Spread over the day (today's: its elapsed part), published.
    const span = daysAgo === 0 ? Date.now() - today : DAY_MS;
    await db.query(
      'bench.outbox',
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
       SELECT u.id, $4 * $1 + g, 'AudioStoredProgressEvent',
              jsonb_build_object('type', 'AudioStoredProgressEvent', 'meeting_id', u.id, 'audio_version', 1,
                                 'highest_contiguous_sequence', g, 'frames_stored', g, 'bytes_stored', g * 3200),
              to_timestamp(($2 + $3 * g::float8 / ($1 + 1)) / 1000), now()
       FROM app_user u, generate_series(1, $1) g`,
      [perUserDay, today - daysAgo * DAY_MS, span, i],
    );
  }
  // Meetings of four months (3, 2 and 1 months ago, this one), a quarter each, their rows spread
  // over their month's first days; the oldest half is purged below.
  await db.query(
    'bench.meetings',
    `INSERT INTO meeting (user_id, title, source_type, start_time)
     SELECT (SELECT id FROM app_user ORDER BY id LIMIT 1), 'm' || g, 'recording', now() FROM generate_series(1, $1) g`,
    [MEETINGS],
  );
  const perMeeting = Math.max(1, Math.floor(MANIFEST_ROWS / MEETINGS));
  await db.query(
    'bench.manifest',
    `INSERT INTO segment_manifest (meeting_id, start_sequence, end_sequence, started_at_ms, duration_ms, object_name,
       byte_count, crc32c, created_at)
     SELECT m.id, g * 50, g * 50 + 49, g * 5000, 5000, 'recordings/' || m.id || '/1/' || g || '.seg', 160000, 'crc',
            date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
              - make_interval(months => (m.n % 4)::int) + make_interval(secs => m.n * 60 + g * 5)
     FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM meeting) m, generate_series(0, $1 - 1) g`,
    [perMeeting],
  );
  await db.query('bench.analyze', 'VACUUM ANALYZE event_outbox');
  await db.query('bench.analyze_manifest', 'VACUUM ANALYZE segment_manifest');
  return { database, db };
}

/** The purge's DELETE of the oldest two months' meetings' rows (100 meetings a statement), then the sweep's months. */
async function measureManifest(db: Database) {
  const cpu = await serverCpuClock(engine.engine, db);
  const wal = async () =>
    engine.engine.kind === 'native'
      ? Number((await db.query<{ b: string }>('bench.wal', `SELECT pg_current_wal_lsn() - '0/0' AS b`)).rows[0].b)
      : 0;
  const purged = (
    await db.query<{ id: string }>(
      'bench.purged',
      `SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM meeting) m WHERE m.n % 4 IN (2, 3)`,
    )
  ).rows.map((r) => r.id);
  const count = async () =>
    (await db.query<{ n: number }>('bench.count', 'SELECT count(*)::int AS n FROM segment_manifest')).rows[0].n;
  const before = await count();
  const [wal0, cpu0, t0] = [await wal(), cpu?.() ?? 0, performance.now()];
  for (let i = 0; i < purged.length; i += 100)
    await db.query('bench.purge', 'DELETE FROM segment_manifest WHERE meeting_id = ANY($1::uuid[])', [
      purged.slice(i, i + 100),
    ]);
  const months = (await dropEmptyManifestPartitions(db)).dropped.length;
  const wallMs = performance.now() - t0;
  const cpuMs = cpu ? cpu() - cpu0 : Number.NaN;
  const walBytes = (await wal()) - wal0;
  const left = await count();
  return { wallMs, cpuMs, walBytes, events: 0, days: months, passes: 1, left, removed: before - left };
}

async function measure(db: Database) {
  const cpu = await serverCpuClock(engine.engine, db);
  const wal = async () =>
    engine.engine.kind === 'native'
      ? Number((await db.query<{ b: string }>('bench.wal', `SELECT pg_current_wal_lsn() - '0/0' AS b`)).rows[0].b)
      : 0;
  const count = async () =>
    (await db.query<{ n: number }>('bench.count', 'SELECT count(*)::int AS n FROM event_outbox')).rows[0].n;
  const before = await count();
  const [wal0, cpu0, t0] = [await wal(), cpu?.() ?? 0, performance.now()];
  let events = 0;
  let days = 0;
  let passes = 0;
  for (;;) {
    const pruned = await pruneExpired(db, 48);
    passes++;
    events += pruned.events;
    days += pruned.eventPartitions;
    if (pruned.events < RETENTION_BATCH_ROWS * RETENTION_MAX_BATCHES) break;
  }
  const wallMs = performance.now() - t0;
  const cpuMs = cpu ? cpu() - cpu0 : Number.NaN;
  const walBytes = (await wal()) - wal0;
  const left = await count();
  return { wallMs, cpuMs, walBytes, events, days, passes, left, removed: before - left };
}

const t0 = performance.now();
const a = await load(false);
const deleted = await measure(a.db);
const purgedPlain = await measureManifest(a.db);
await a.db.close();
await a.database.close();
const b = await load(true);
const dropped = await measure(b.db);
const purgedMonthly = await measureManifest(b.db);
await b.db.close();
await b.database.close();
const loadS = (performance.now() - t0) / 1000;

const mb = (n: number) => `${(n / 2 ** 20).toFixed(n < 2 ** 20 ? 2 : 0)} MiB`;
const row = (name: string, r: typeof deleted): Row => ({
  retention: name,
  'rows removed': `${r.removed.toLocaleString('en')}${r.days ? ` (${r.days} partitions)` : ''}`,
  'sweep passes': r.passes,
  wall: ms(r.wallMs),
  'server CPU': Number.isNaN(r.cpuMs) ? '-' : ms(r.cpuMs),
  WAL: mb(r.walBytes),
  'rows kept': r.left.toLocaleString('en'),
});
const out = [
  `Engine: ${engine.engine.label}. ${ROWS.toLocaleString('en')} outbox events on four days (4 and 3 days ago, yesterday, ` +
    `today); retention (48 h) removes half: the batched DELETE against dropping days, same data (loaded in ${loadS.toFixed(0)} s). ` +
    'Server CPU: the database processes. Method: bench/retention.ts.',
  '',
  table([row('DELETE in batches (before)', deleted), row('day partitions dropped', dropped)]),
  '',
  `Ratio, DELETE to drop: wall ${(deleted.wallMs / dropped.wallMs).toFixed(0)}×, server CPU ` +
    `${(deleted.cpuMs / dropped.cpuMs).toFixed(0)}×, WAL ${(deleted.walBytes / Math.max(1, dropped.walBytes)).toFixed(0)}×.`,
  '',
  `Manifest: ${MANIFEST_ROWS.toLocaleString('en')} rows of ${MEETINGS.toLocaleString('en')} meetings over four months; ` +
    "the oldest two months' meetings purged (DELETE by meeting, 100 a statement), then the sweep's pass over the months.",
  '',
  table([
    row('manifest, plain: purge', purgedPlain),
    row('manifest by month: purge, emptied months dropped', purgedMonthly),
  ]),
].join('\n');
console.log(out);
writeSection('Retention sweep', out);
await engine.stop();
