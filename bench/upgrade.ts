// `npm run bench:upgrade`: db:apply from a released schema to today's on a database of
// BENCH_SEGMENTS transcript segments (default 1,000,000) while BENCH_RECORDINGS recordings
// (default 200) stream to the live service (bench:live's stack: the deployable bundle, emulators,
// an ML sink), as deployment runs it (schema/rollout.ts): once before the rollout, the release's
// own live bundle serving (the apply defers what would break it), then after it, this tree's
// serving (`--wait-older-release` finishes). Reports, for each, the longest lock wait any other
// backend saw and the live path's acknowledgement delays (frame sent → progress event covering
// it), against a baseline load of the same size without an upgrade, in the same run.
// BENCH_EVENTS outbox events (default 1,000,000) are converted to the day-partitioned outbox,
// BENCH_MANIFEST manifest rows (default 1,000,000) to the month-partitioned manifest, which the
// load writes meanwhile.
// BENCH_FROM (a release of schema/releases, default round-2: the last whose diff rewrites tables
// and backfills; round-3's diff is today's additions only), BENCH_SECONDS (each load, default 300:
// long enough that the load covers the whole apply on 1,000,000 segments; the report says if not),
// BENCH_LIVE_BUNDLE (the release's live bundle, built from its commit in schema/releases/seed.ts,
// e.g. round-3's from d22eec2; without it, this tree's serves throughout, and it cannot serve a
// released schema: it needs today's columns, event_sequence.routes_version among them).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sleep } from '@mi/lib/async';
import { applySchema, type ApplyOptions } from '../schema/apply';
import { brokenInvariants, rowCounts } from '../schema/invariants';
import { RELEASES, releaseSqlPath } from '../schema/releases/seed';
import { createTestDatabase, startTestEngine } from '../test/support/database';
import { measure } from './live';
import { BUNDLE, LIVE_BUNDLE, makeRecordings, serverNode, startStack } from './live-processes';
import type { LoadResult } from './live-roles';
import { ms, percentile, table, writeSection, type Row } from './report';

const SEGMENTS = Number(process.env.BENCH_SEGMENTS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const MANIFEST = Number(process.env.BENCH_MANIFEST ?? 1_000_000);
const RECORDINGS = Number(process.env.BENCH_RECORDINGS ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 300);
const FROM = RELEASES.find((r) => r.name === (process.env.BENCH_FROM ?? 'round-2'));
if (!FROM) throw new Error(`BENCH_FROM must be one of ${RELEASES.map((r) => r.name).join(', ')}`);
const SEGMENTS_PER_MEETING = 1000;
const APPLIER = 'bench-db-apply';

/** The released schema with SEGMENTS segments: 100 users, 1,000 per meeting, 1 in 10 attributed, 1 in 100 with an embedding. */
async function seedLarge(db: pg.Client): Promise<void> {
  const meetings = Math.max(1, Math.ceil(SEGMENTS / SEGMENTS_PER_MEETING));
  await db.query(`INSERT INTO app_user (username, email) SELECT 'u' || i, 'u' || i || '@example.test'
      FROM generate_series(1, 100) i`);
  await db.query(`INSERT INTO person (user_id, display_name) SELECT id, 'Person of ' || username FROM app_user`);
  await db.query(
    `INSERT INTO meeting (user_id, title, source_type, start_time)
     SELECT (SELECT id FROM app_user ORDER BY id OFFSET g % 100 LIMIT 1), 'Quarterly budget ' || g, 'upload', now() - g * interval '1 hour'
     FROM generate_series(1, $1) g`,
    [meetings],
  );
  await db.query(`INSERT INTO transcription (meeting_id, status) SELECT id, 'completed' FROM meeting`);
  // In chunks of 100 meetings: one statement per chunk keeps each transaction's memory bounded.
  const { rows } = await db.query<{ id: string; person: string }>(
    `SELECT t.id, (SELECT p.id FROM person p WHERE p.user_id = m.user_id LIMIT 1) AS person
     FROM transcription t JOIN meeting m ON m.id = t.meeting_id ORDER BY t.id`,
  );
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows.slice(i, i + 100);
    await db.query(
      `INSERT INTO transcript_segment (transcription_id, person_id, speaker_label, text, start_ms, end_ms, feature_vector)
       SELECT c.id, CASE WHEN g % 10 = 0 THEN c.person END, 'S' || (g % 3),
              'line ' || g || ' on the budget, the hiring plan and the quarter ahead', g * 1000, g * 1000 + 900,
              CASE WHEN g % 100 = 0 THEN (SELECT array_agg(random() - 0.5 + d * 0 + g * 0)::real[] FROM generate_series(1, 192) d)::vector END
       FROM unnest($1::uuid[], $2::uuid[]) AS c(id, person), generate_series(0, $3 - 1) g`,
      [chunk.map((r) => r.id), chunk.map((r) => r.person), Math.min(SEGMENTS_PER_MEETING, SEGMENTS)],
    );
  }
  // An outbox of BENCH_EVENTS events over the last 48 h, for db:apply's conversion to day partitions.
  await db.query(
    `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
     SELECT u.id, g, 'EntityChanged', '{"type":"EntityChanged"}'::jsonb, now() - make_interval(secs => 172800.0 * g / $1), now()
     FROM app_user u, generate_series(1, $1) g`,
    [Math.ceil(EVENTS / 100)],
  );
  // The manifest of BENCH_MANIFEST stored segments of those meetings, for its conversion to month partitions.
  await db.query(
    `INSERT INTO segment_manifest (meeting_id, start_sequence, end_sequence, started_at_ms, duration_ms, object_name,
       byte_count, crc32c, created_at)
     SELECT m.id, g * 50, g * 50 + 49, g * 5000, 5000, 'recordings/' || m.id || '/1/' || g || '.seg', 160000, 'crc',
            now() - make_interval(days => g % 60)
     FROM meeting m, generate_series(0, $1 - 1) g`,
    [Math.ceil(MANIFEST / meetings)],
  );
  await db.query('INSERT INTO event_sequence (user_id, last_seq) SELECT id, $1 FROM app_user', [
    Math.ceil(EVENTS / 100),
  ]);
  await db.query('ANALYZE');
}

/** Samples the longest lock wait of any client backend but the applier's (not autovacuum), every 100 ms. */
function lockWatch(url: string) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // the engine stopping under it: the run's own error is reported
  let longest = { ms: 0, query: '' };
  let running = true;
  const done = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ ms: number; query: string }>(
        `SELECT extract(epoch FROM clock_timestamp() - query_start) * 1000 AS ms, left(query, 80) AS query
         FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'
           AND application_name <> $1 AND pid <> pg_backend_pid()`,
        [APPLIER],
      );
      for (const r of rows) if (Number(r.ms) > longest.ms) longest = { ms: Number(r.ms), query: r.query };
      await sleep(100);
    }
    await client.end();
  })().catch(() => undefined); // the engine stopping under it: the run's own error is reported
  return {
    stop: async () => {
      running = false;
      await done;
      return longest;
    },
  };
}

// Not Math.max(...values): 200 recordings for 300 s are 600,000 acks, past the call stack's arguments.
const largest = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0);

const stops: (() => Promise<unknown>)[] = [];
const dir = mkdtempSync(path.join(tmpdir(), 'mi-bench-upgrade-'));
try {
  const engine = await startTestEngine();
  stops.push(engine.stop);
  const database = await createTestDatabase(engine.engine, { schema: false });
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  admin.on('error', () => undefined);
  stops.push(() => admin.end());
  await admin.query(readFileSync(releaseSqlPath(FROM), 'utf8'));
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  await seedLarge(admin);
  console.log(`seeded ${SEGMENTS} segments of ${FROM.name} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const before = await rowCounts(admin);

  // The services' sessions name themselves (release 4 on) or not (round 3): not the harness's name.
  const served = new URL(database.url);
  served.searchParams.delete('application_name');
  const stack = await startStack({ url: served.toString(), engine: engine.engine });
  stops.push(stack.stop);
  const { db, named } = stack;
  // The live service's pool keeps its production size (10) but waits up to the load's own start
  // timeout for a connection: with production's 5 s, at load average 30 on the 2 shared cores, 165
  // of 200 take starts answered unavailable before any upgrade ran. Waiting, they all start.
  const env = { ...stack.env, DB_CONNECT_TIMEOUT_MS: '60000' };
  const node = serverNode();
  const load = async (script = LIVE_BUNDLE) =>
    measure(RECORDINGS, 'live', await makeRecordings(db, RECORDINGS), SECONDS, env, dir, {
      pinned: false,
      named,
      node,
      script,
    });
  // A first, unreported round warms up the emulators, the JIT and the caches (as bench:live's).
  await measure(10, 'live', await makeRecordings(db, 10), 5, env, dir, { pinned: false, named, node });
  // Baseline: the same load, no upgrade.
  const baseline = await load();

  // The same load again, twice: the upgrade starts once the recordings' first segments are stored.
  // Before the rollout, the release's own bundle serves and the apply defers what would break it;
  // after it (the release's sessions gone with its load), this tree's bundle serves and the apply
  // with --wait-older-release finishes (schema/rollout.ts).
  const manifests = async () => Number((await admin.query('SELECT count(*) AS n FROM segment_manifest')).rows[0].n);
  const url = new URL(database.url);
  url.searchParams.set('application_name', APPLIER);
  async function upgradeUnderLoad(name: string, script: string, opts: ApplyOptions) {
    const stored = await manifests();
    const during = load(script);
    let loadEnd = Infinity;
    void during.then(
      () => (loadEnd = performance.now()),
      () => undefined, // awaited below
    );
    while ((await manifests()) < stored + RECORDINGS) await sleep(200);
    const watch = lockWatch(database.url);
    const lines: string[] = [];
    const t = performance.now();
    const applyFrom = Date.now(); // the load process stamps its frames with the same clock
    const result = await applySchema(url.toString(), {
      ...opts,
      log: (l) => {
        lines.push(`${((performance.now() - t) / 1000).toFixed(1)} s ${l.replace(/\s+/g, ' ').slice(0, 110)}`);
        console.log(lines.at(-1)); // as it goes: a run cut short still shows where it was
      },
    }).finally(() => watch.stop());
    const applyMs = performance.now() - t;
    const applyTo = Date.now();
    const longest = await watch.stop();
    console.log(`${name}: longest lock wait ${ms(longest.ms)}: ${longest.query.replace(/\s+/g, ' ')}`);
    const measured = await during;
    // The acks of the frames sent while the apply ran: what the upgrade could delay. The load's
    // figures span its whole run, most of it before and after the apply.
    const inApply = measured.result.ackMs.filter((_, i) => {
      const sentAt = measured.result.ackSentAt[i];
      return sentAt >= applyFrom && sentAt <= applyTo;
    });
    // How much of the apply the load streamed through (the load may end first on a slow machine).
    const covered = Math.min(applyMs, loadEnd - t) / applyMs;
    return { name, script, result, lines, applyMs, covered, longest, load: measured.result, inApply };
  }
  const cpu1 = process.cpuUsage();
  const phases = [
    await upgradeUnderLoad('before the rollout', LIVE_BUNDLE, {}),
    await upgradeUnderLoad('after the rollout', BUNDLE, { waitOlderReleaseMs: 600_000 }),
  ];
  const applyCpuMs = (process.cpuUsage(cpu1).user + process.cpuUsage(cpu1).system) / 1000;

  const after = await rowCounts(admin);
  const lost = Object.entries(before).filter(([k, n]) => k !== 'segment_manifest' && after[k] < n);
  const broken = await brokenInvariants(admin);
  const problems = [baseline.result, ...phases.map((p) => p.load)].filter((r) => Object.keys(r.problems).length);
  const row = (name: string, r: LoadResult): Row => ({
    load: name,
    'acked/sent': (r.acked / r.sent).toFixed(4),
    'ack p50': ms(percentile(r.ackMs, 50)),
    'ack p99': ms(percentile(r.ackMs, 99)),
    'ack max': ms(largest(r.ackMs)),
  });
  const share = (acks: number[]) =>
    `${((100 * acks.filter((a) => a > 2500).length) / Math.max(1, acks.length)).toFixed(3)}%`;
  const bundle = (script: string) =>
    script === BUNDLE ? "this tree's bundle" : `the release's bundle ${path.relative(process.cwd(), script)}`;
  const phaseText = (p: (typeof phases)[number]) => {
    // The plan's statements are in schema/releases; the timeline keeps the apply's own notes (lock
    // retries, waits, deferrals, applied, data steps) and any statement flagged as rewriting a table or destructive.
    const planLines = p.lines.filter((l) => {
      const text = l.replace(/^[\d.]+ s /, '');
      return (
        !text.startsWith('-- ') ||
        /^-- (online, outside the transaction:|\w+: (converted to a partitioned table|then in one transaction))/.test(
          text,
        )
      );
    });
    const at = (l: string | undefined) => l?.split(' s ')[0] ?? '-';
    const planAt = [...new Set([at(planLines[0]), at(planLines.at(-1))])].join('–');
    return [
      `**db:apply ${p.name}** (${bundle(p.script)} serving): frames sent while it ran: ${p.inApply.length.toLocaleString('en')}; ` +
        `ack p99 ${ms(percentile(p.inApply, 99))}, max ${ms(largest(p.inApply))} ` +
        `(target: none past 2.5 s: ${p.inApply.length && largest(p.inApply) <= 2500 ? 'met' : 'not met'}; ` +
        `${share(p.inApply)} past it, against ${share(baseline.result.ackMs)} of the baseline's). ` +
        `Longest lock wait of another backend: ${ms(p.longest.ms)}. ${(p.applyMs / 1000).toFixed(1)} s wall, ` +
        `${p.result.statements.length} statement(s), ${p.result.deferred.length} deferred, the load streaming through ` +
        `${(100 * p.covered).toFixed(0)}% of it.`,
      '',
      `Timeline (the apply's notes; its ${planLines.length} plan line(s), logged at ${planAt} s, left out):`,
      '',
      '```',
      ...p.lines.filter((l) => !planLines.includes(l)),
      '```',
    ];
  };
  const body = [
    `db:apply from ${FROM.name} (schema/releases) to today's schema.sql on ${SEGMENTS.toLocaleString('en')} transcript segments` +
      `, ${EVENTS.toLocaleString('en')} outbox events and ${MANIFEST.toLocaleString('en')} manifest rows ` +
      `(${Math.ceil(SEGMENTS / SEGMENTS_PER_MEETING)} meetings) while ${RECORDINGS} recordings stream for ${SECONDS} s to the ` +
      `live service (bench:live's stack, not pinned), as deployment runs it: before the rollout, with ${bundle(LIVE_BUNDLE)} ` +
      `serving; after it, with this tree's, \`--wait-older-release\`. Baseline: the same load without an upgrade. ${engine.engine.label}.`,
    '',
    table([
      row('baseline (no upgrade)', baseline.result),
      ...phases.map((p) => row(`during db:apply ${p.name}`, p.load)),
    ]),
    '',
    `Rows lost: ${lost.length ? JSON.stringify(lost) : 'none'}; ` +
      `invariants broken: ${Object.keys(broken).length ? JSON.stringify(Object.keys(broken)) : 'none'}; ` +
      `load problems: ${problems.length ? problems.map((r) => JSON.stringify(r.problems)).join(', ') : 'none'}.`,
    '',
    ...phases.flatMap((p) => [...phaseText(p), '']),
  ].join('\n');
  console.log(`the bench process's CPU over both upgrades' loads: ${(applyCpuMs / 1000).toFixed(1)} s`);
  console.log(
    `\n${body}\n\nbench process CPU total ${((process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1e6).toFixed(0)} s`,
  );
  writeSection('Upgrade', body, path.join(import.meta.dirname, '..', 'BENCHMARKS.md'));
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
