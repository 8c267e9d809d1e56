// `npm run bench:retention`: the sweep's retention pass over an outbox of 10 million events
// (BENCH_OUTBOX_ROWS), a third of them past EVENT_RETENTION_HOURS, on the test engine (native
// PostgreSQL when installed). Reports the time of each bounded batch against the baseline of a
// batch that finds nothing to delete, and the whole pass.
import { createDatabase } from '@mi/lib/db/pool';
import { pruneExpired, RETENTION_BATCH_ROWS, RETENTION_MAX_BATCHES } from '@mi/lib/repositories/retention';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { ms, percentile, table, writeSection, type Row } from './report';

const ROWS = Number(process.env.BENCH_OUTBOX_ROWS ?? 10_000_000);
const USERS = 1_000;
const engine = await startTestEngine();
const database = await createTestDatabase(engine.engine);
const db = createDatabase(database.url, { max: 2 });

const t0 = performance.now();
await db.query(
  'bench.users',
  `INSERT INTO app_user (username, email) SELECT 'u' || g, 'u' || g || '@bench.invalid' FROM generate_series(1, $1) g`,
  [USERS],
);
// Spread over 72 hours: the oldest 24 h are past the 48 h retention.
await db.query(
  'bench.outbox',
  `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
   SELECT u.id, g, 'AudioStoredProgressEvent',
          jsonb_build_object('type', 'AudioStoredProgressEvent', 'meeting_id', u.id, 'audio_version', 1, 'highest_contiguous_sequence', g, 'frames_stored', g, 'bytes_stored', g * 3200),
          now() - make_interval(secs => 72 * 3600 * (1 - g::float8 / ($1::int / $2::int))), now()
   FROM (SELECT id, row_number() OVER () AS n FROM app_user) u, generate_series(1, $1::int / $2::int) g`,
  [ROWS, USERS],
);
await db.query('bench.analyze', 'ANALYZE event_outbox');
const loadMs = performance.now() - t0;

const batchTimes: number[] = [];
let deleted = 0;
const passStart = performance.now();
let passes = 0;
for (;;) {
  const t = performance.now();
  const pruned = await pruneExpired(db, 48);
  passes++;
  deleted += pruned.events;
  batchTimes.push((performance.now() - t) / Math.max(1, Math.ceil(pruned.events / RETENTION_BATCH_ROWS)));
  if (pruned.events < RETENTION_BATCH_ROWS * RETENTION_MAX_BATCHES) break;
}
const passMs = performance.now() - passStart;
const idle: number[] = [];
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  await pruneExpired(db, 48);
  idle.push(performance.now() - t);
}
const { rows } = await db.query<{ n: number }>('bench.left', 'SELECT count(*)::int AS n FROM event_outbox');
const rowsOut: Row[] = [
  {
    measure: `a batch of ${RETENTION_BATCH_ROWS.toLocaleString('en')} deletes (mean per pass, p50 / p99)`,
    result: `${ms(percentile(batchTimes, 50))} / ${ms(percentile(batchTimes, 99))}`,
    baseline: `a pass with nothing to delete: ${ms(percentile(idle, 50))}`,
    ratio: (percentile(batchTimes, 50) / percentile(idle, 50)).toFixed(1),
  },
  {
    measure: `working off the backlog: ${deleted.toLocaleString('en')} events past 48 h`,
    result: `${(passMs / 1000).toFixed(1)} s in ${passes} sweep passes of at most ${RETENTION_MAX_BATCHES} batches`,
    baseline: `${rows[0].n.toLocaleString('en')} events kept`,
    ratio: '',
  },
];
const out = `Engine: ${engine.engine.label}. An outbox of ${ROWS.toLocaleString('en')} events of ${USERS} users spread over 72 h (loaded in ${(loadMs / 1000).toFixed(0)} s); EVENT_RETENTION_HOURS 48.\n\n${table(rowsOut)}`;
console.log(out);
writeSection('Retention sweep', out);
await db.close();
await database.close();
await engine.stop();
