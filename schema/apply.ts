// `npm run db:apply [--dry-run] [--allow-destructive] [--wait-older-release SECONDS]`: bring a
// database to the state of schema/schema.sql while the service runs on it (and, until it has
// rolled out, the release before it: schema/rollout.ts). The target state is loaded into a scratch
// database (see scratchDatabase), migra diffs the live database against it, and the plan is applied (see
// applySchema). Statements that can lose data are refused unless allowed; data that a new
// constraint would reject is named before anything is applied. Target: DATABASE_URL, else the local stack's
// file-backed PGlite under DATA_DIR/pg, refused while `npm start` holds DATA_DIR (its lock file).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createClient } from '@pgkit/client';
import { run as migra } from '@pgkit/migra';
import { retry } from '../lib/async';
import { lockDataDir } from '../lib/db/data-dir-lock';
import { startEmbeddedPostgres } from '../lib/db/embedded';
import { runDataSteps } from './data-steps';
import { destructiveStatements, type ColumnTypes } from './destructive';
import { createDatabase } from '../lib/db/pool';
import {
  ensurePartitions,
  PARTITION_UNIT,
  PARTITION_DAYS_AHEAD as PARTITION_DAYS,
  PARTITIONED_TABLES,
} from '../lib/repositories/partitions';
import { dropInvalidIndexes, rewritesTable, runOnline, splitOnline, withLockRetry } from './online';
import { namesTable, plannedConversions, statementsOf } from './partitioning';
import { preflight, PreflightError } from './preflight';
import { applyRoles, parseRuntimeLogins, type ServiceKind } from './roles';
import {
  awaitOlderSessions,
  DEFERRED_CONVERSIONS,
  describeSessions,
  enablesRowSecurity,
  OlderReleaseError,
} from './rollout';

export { PreflightError } from './preflight';
export { OlderReleaseError } from './rollout';

export const SCHEMA_SQL_PATH = fileURLToPath(new URL('./schema.sql', import.meta.url));

export interface ApplyOptions {
  allowDestructive?: boolean;
  dryRun?: boolean;
  log?: (line: string) => void;
  /** Tables with at least this many rows get their indexes built and dropped CONCURRENTLY. */
  onlineRows?: number;
  /** How long a statement of the transaction may wait for a lock before the transaction is retried. */
  lockTimeoutMs?: number;
  /** How many times a transaction that waited too long for a lock is retried. */
  lockRetries?: number;
  /** Logins made members of each kind's runtime role (DB_RUNTIME_LOGINS, schema/roles.ts). */
  runtimeLogins?: Partial<Record<ServiceKind, string>>;
  /**
   * After the rollout: how long to wait for the older release's sessions to go before planning.
   * If some are still there, the deferred changes stay deferred and the apply throws
   * OlderReleaseError once it has applied the rest.
   */
  waitOlderReleaseMs?: number;
}

export interface ApplyResult {
  /** The plan: the transaction's statements, then those run outside it (online). */
  statements: string[];
  applied: boolean;
  /** Rows each data step changed (schema/data-steps.ts); empty when none needed to. */
  dataSteps: Record<string, number>;
  /** What waits for the older release's sessions to go (schema/rollout.ts): conversions, statements. */
  deferred: string[];
}

export class DestructiveChangeError extends Error {
  constructor(readonly statements: string[]) {
    const list = statements.join('\n');
    super(`refusing ${statements.length} destructive statement(s) without --allow-destructive:\n${list}`);
    this.name = 'DestructiveChangeError';
  }
}

/**
 * Brings the database at targetUrl to schema.sql, in this order: the preflight (the data against
 * the constraints the plan adds), the plan's changes in one transaction (a rewrite of a large
 * table in one of its own; each retried when it waits too long for a lock, so that it never
 * queues the service's writers behind it for long), the index builds and drops on large tables
 * CONCURRENTLY outside them (schema/online.ts), then the data steps in batches.
 * An empty database (nothing in schema public but extensions) gets schema.sql itself, which is
 * what the diff would produce anyway, in a fraction of the time: every test database starts so.
 */
export async function applySchema(targetUrl: string, opts: ApplyOptions = {}): Promise<ApplyResult> {
  const log = opts.log ?? (() => {});
  const schemaSql = readFileSync(SCHEMA_SQL_PATH, 'utf8');
  const target = new pg.Client({ connectionString: targetUrl });
  await target.connect();
  try {
    // The apply works on every user's rows (preflight, data steps): the row policies bind the
    // schema owner too (FORCE), so its session declares itself a service.
    await target.query(`SELECT set_config('app.service', 'apply', false)`);
    if (!opts.dryRun && (await isEmpty(target))) {
      log('-- empty database: running schema.sql');
      await inTransaction(target, [schemaSql]);
      await createPartitions(targetUrl, log);
      await applyRoles(target, opts.runtimeLogins, log);
      return { statements: [schemaSql], applied: true, dataSteps: {}, deferred: [] };
    }
    // An index a CONCURRENTLY build left invalid (a run cut short) looks current to the diff.
    if (!opts.dryRun) await dropInvalidIndexes(target, log);
    const onlineRows = opts.onlineRows ?? 10_000;
    // Writers of a table queue behind the plan's lock request while it waits: 500 ms keeps a live
    // segment commit's wait, and so its acknowledgement, well inside 2.5 s (bench:upgrade).
    const retry = { timeoutMs: opts.lockTimeoutMs ?? 500, retries: opts.lockRetries ?? 100, log };
    // While an older release runs here, what would break it waits (schema/rollout.ts).
    const older = await awaitOlderSessions(target, opts.waitOlderReleaseMs ?? 0, log);
    const defers = (table: string) => older.length > 0 && DEFERRED_CONVERSIONS.has(table);
    // Plain tables schema.sql partitions are converted first (schema/partitioning.ts); a dry run
    // shows the conversion in place of the diff's statements for those tables.
    const planned = await plannedConversions(target, schemaSql, (t) => hasRows(target, t, onlineRows));
    // guard: rollout-defers-manifest | remove: .filter((c) => !defers(c.table)) | test: schema/rollout.test.ts :: round 3 is connected
    const conversions = planned.filter((c) => !defers(c.table));
    for (const c of conversions) {
      log(`-- ${c.table}: converted to a partitioned table, online:\n${c.online.join(';\n')};`);
      log(`-- ${c.table}: then in one transaction:\n${c.swap.join(';\n')};`);
    }
    // A partitioned table the database lacks is created by schema.sql's own statements: migra's
    // (an index ON ONLY the parent, then a key using it) fail on an empty partitioned table.
    const missing: string[] = [];
    for (const t of PARTITIONED_TABLES)
      if ((await target.query('SELECT to_regclass($1) AS t', [`public.${t}`])).rows[0].t === null) missing.push(t);
    const own = [...conversions.map((c) => c.table), ...missing];
    const waiting = planned.filter((c) => defers(c.table)).map((c) => c.table); // plain, its policy with its conversion
    const whole = [
      ...(await plan(target, targetUrl, schemaSql)).filter((s) => ![...own, ...waiting].some((t) => namesTable(s, t))),
      ...missing.flatMap((t) => statementsOf(schemaSql, t).map((s) => `${s};`)),
      ...own.flatMap((t) => statementsOf(schemaSql, t, true).map((s) => `${s};`)),
    ];
    // guard: rollout-defers-row-security | remove: older.length ? whole.filter((s) => !enablesRowSecurity(s)) :  | test: schema/rollout.test.ts :: round 3 is connected
    const diff = older.length ? whole.filter((s) => !enablesRowSecurity(s)) : whole;
    const deferred = [
      ...waiting.map((t) => `-- converting ${t} to a partitioned table`),
      ...whole.filter((s) => !diff.includes(s)),
    ];
    if (deferred.length)
      log(
        `-- deferred while ${describeSessions(older)} are connected:\n${deferred.join('\n')}\n-- run db:apply --wait-older-release SECONDS after the rollout`,
      );
    const { transactions, online } = await splitOnline(target, diff, onlineRows);
    const statements = [...transactions.flat(), ...online];
    const destructive = destructiveStatements(statements, await columnTypes(target));
    const rewrites = new Set(statements.filter(rewritesTable));
    transactions.forEach((group, i) => {
      if (transactions.length > 1) log(`-- transaction ${i + 1} of ${transactions.length}`);
      for (const s of group) {
        log(destructive.includes(s) ? `-- DESTRUCTIVE\n${s}` : rewrites.has(s) ? `-- REWRITES THE TABLE\n${s}` : s);
      }
    });
    if (online.length) log(`-- online, outside the transaction:\n${online.join('\n')}`);
    log(statements.length ? `-- ${statements.length} statement(s)` : '-- schema is up to date');
    // Both checks are read-only: a dry run makes them too, and refuses (and exits) as the apply would.
    if (destructive.length && !opts.allowDestructive) throw new DestructiveChangeError(destructive);
    const offences = await preflight(target, statements);
    if (offences.length) throw new PreflightError(offences);
    if (opts.dryRun) {
      const ahead = PARTITIONED_TABLES.map((t) => `${t}'s ${PARTITION_UNIT[t]}s`);
      log(`-- then: ${ahead.join(', ')} through ${PARTITION_DAYS} days ahead are created if missing`);
      if (deferred.length && opts.waitOlderReleaseMs !== undefined) throw new OlderReleaseError(older, deferred);
      const all = [...conversions.flatMap((c) => [...c.online, ...c.swap]), ...statements];
      return { statements: all, applied: false, dataSteps: {}, deferred };
    }
    for (const c of conversions) {
      for (const s of c.online) await withLockRetry(retry, () => runOnline(target, s, retry.timeoutMs));
      await withLockRetry(retry, () => inTransaction(target, c.swap, retry.timeoutMs));
    }
    for (const t of transactions) await withLockRetry(retry, () => inTransaction(target, t, retry.timeoutMs));
    for (const s of online) await withLockRetry(retry, () => runOnline(target, s, retry.timeoutMs));
    if (statements.length || conversions.length) log('-- applied');
    await createPartitions(targetUrl, log);
    await applyRoles(target, opts.runtimeLogins, log);
    const dataSteps = await runDataSteps(target);
    for (const [step, rows] of Object.entries(dataSteps)) log(`-- data step ${step}: ${rows} row(s)`);
    const all = [...conversions.flatMap((c) => [...c.online, ...c.swap]), ...statements];
    if (deferred.length && opts.waitOlderReleaseMs !== undefined) throw new OlderReleaseError(older, deferred);
    return { statements: all, applied: all.length > 0, dataSteps, deferred };
  } finally {
    // PGlite serves every connection from one session: the declaration must not outlive the apply.
    await target.query(`SELECT set_config('app.service', '', false)`).catch(() => undefined);
    await target.end();
  }
}

/** Whether the table has at least `n` rows (counted no further). */
async function hasRows(client: pg.Client, table: string, n: number): Promise<boolean> {
  const sql = `SELECT count(*)::int AS n FROM (SELECT 1 FROM "public"."${table}" LIMIT $1) r`;
  return (await client.query<{ n: number }>(sql, [n])).rows[0].n >= n;
}

/** The partitions ahead (lib/repositories/partitions.ts), as the sweep creates them. */
async function createPartitions(url: string, log: (line: string) => void): Promise<void> {
  const db = createDatabase(url, { max: 1 });
  try {
    for (const t of PARTITIONED_TABLES) {
      const created = await ensurePartitions(db, t);
      if (created.length) log(`-- partitions created: ${created.join(', ')}`);
    }
  } finally {
    await db.close();
  }
}

async function isEmpty(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ empty: boolean }>(`
    SELECT NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE n.nspname = 'public'
                         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e'))
       AND NOT EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                       WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd')) AS empty`);
  return rows[0].empty;
}

/** The statements that take the live database to schema.sql, in migra's order. */
async function plan(liveClient: pg.Client, liveUrl: string, schemaSql: string): Promise<string[]> {
  const scratch = await scratchDatabase(liveClient, liveUrl);
  // pg-promise warns about a second client for one URL; these are short-lived and ours.
  const clientOptions = { pgpOptions: { initialize: { noWarnings: true } } };
  const live = createClient(liveUrl, clientOptions);
  const desired = createClient(scratch.url, clientOptions);
  const desiredClient = new pg.Client({ connectionString: scratch.url });
  try {
    await desiredClient.connect();
    await desiredClient.query(schemaSql);
    // unsafe: let migra emit drops; this tool decides what is destructive itself.
    // ignoreExtensionVersions: pgvector in PGlite and on Cloud SQL differ in version only.
    const migration = await migra(live, desired, { unsafe: true, schema: 'public', ignoreExtensionVersions: true });
    // Partitions made at run time (days ahead, a converted table's past) are not in schema.sql:
    // the diff leaves them, their keys and their indexes alone.
    const partitionsSql = `SELECT c.relname AS name FROM pg_class c WHERE c.relispartition AND c.relkind = 'r'
      AND c.relnamespace = 'public'::regnamespace`;
    const desiredParts = new Set((await desiredClient.query<{ name: string }>(partitionsSql)).rows.map((r) => r.name));
    const runtime = (await liveClient.query<{ name: string }>(partitionsSql)).rows
      .map((r) => r.name)
      .filter((n) => !desiredParts.has(n));
    const statements = migration.statements.array
      .map((s) => s.trim())
      .filter((s) => s && !runtime.some((n) => namesTable(s, n)));
    return [
      ...statements,
      ...(await storageParameterStatements(liveClient, desiredClient)),
      ...(await rowSecurityStatements(liveClient, schemaSql)),
    ];
  } finally {
    await Promise.allSettled([live.end(), desired.end(), desiredClient.end()]);
    await scratch.stop();
  }
}

/**
 * Where schema.sql is loaded to be diffed against: a throwaway database on the target's own
 * server when it lets us create one (milliseconds, and the server's own pgvector), else an
 * in-memory PGlite (seconds to boot; a role without CREATEDB, or the embedded target).
 */
async function scratchDatabase(live: pg.Client, liveUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const name = `mi_apply_scratch_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const created = await live.query(`CREATE DATABASE ${name}`).then(
    () => true,
    () => false,
  );
  const url = new URL(liveUrl);
  url.pathname = `/${name}`;
  // PGlite (the embedded target, behind pglite-socket) accepts CREATE DATABASE but serves its one
  // database whatever the URL names: only a database that is really another one is a scratch.
  if (!created || !(await isDatabase(url.toString(), name))) {
    const embedded = await startEmbeddedPostgres();
    return { url: embedded.url, stop: () => embedded.stop() };
  }
  // pg's pool.end() resolves before its sockets close: a FORCE drop now would kill a backend still
  // hanging up, and its client (out of the pool, no listener) would throw the FATAL uncaught. The drop
  // waits for the scratch's sessions to go (55006: in use); FORCE only for one that never leaves.
  const drop = (force: string) => live.query(`DROP DATABASE IF EXISTS ${name}${force}`);
  const stop = async () =>
    void (await retry(() => drop(''), {
      steps: [50, 100, 200],
      attempts: 25,
      giveUp: (e) => (e as { code?: string }).code !== '55006',
    }).catch(() => drop(' WITH (FORCE)')));
  return { url: url.toString(), stop };
}

async function isDatabase(url: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return (await client.query<{ db: string }>('SELECT current_database() AS db')).rows[0]?.db === name;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const TABLE_OPTIONS = `SELECT relname AS name, coalesce(reloptions, '{}') AS options FROM pg_class
  WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY relname`;

/** migra ignores tables' storage parameters (fillfactor); these bring them to schema.sql's. */
async function storageParameterStatements(live: pg.Client, desired: pg.Client): Promise<string[]> {
  type Row = { name: string; options: string[] };
  const current = new Map((await live.query<Row>(TABLE_OPTIONS)).rows.map((r) => [r.name, r.options]));
  const key = (option: string) => option.split('=')[0];
  return (await desired.query<Row>(TABLE_OPTIONS)).rows.flatMap(({ name, options }) => {
    const have = current.get(name) ?? [];
    const reset = have.map(key).filter((k) => !options.map(key).includes(k));
    const set = options.filter((o) => !have.includes(o));
    return [
      ...(reset.length ? [`alter table "public"."${name}" reset (${reset.join(', ')});`] : []),
      ...(set.length ? [`alter table "public"."${name}" set (${set.join(', ')});`] : []),
    ];
  });
}

/**
 * migra creates policies but leaves a table's row level security as it was: schema.sql's
 * `ALTER TABLE t ENABLE|FORCE ROW LEVEL SECURITY` lines for the tables not yet so (issue 38).
 */
async function rowSecurityStatements(live: pg.Client, schemaSql: string): Promise<string[]> {
  const { rows } = await live.query<{ name: string; enabled: boolean; forced: boolean }>(
    `SELECT relname AS name, relrowsecurity AS enabled, relforcerowsecurity AS forced FROM pg_class
     WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')`,
  );
  const current = new Map(rows.map((r) => [r.name, r]));
  return [...schemaSql.matchAll(/^ALTER TABLE (\w+) (ENABLE|FORCE) ROW LEVEL SECURITY;$/gm)]
    .filter(([, table, what]) => {
      const now = current.get(table);
      return !(what === 'ENABLE' ? now?.enabled : now?.forced);
    })
    .map(([statement]) => statement);
}

/** The current type of every column of schema public, for the destructive guard. */
async function columnTypes(client: pg.Client): Promise<ColumnTypes> {
  const { rows } = await client.query<{ key: string; type: string }>(
    `SELECT c.relname || '.' || a.attname AS key, format_type(a.atttypid, a.atttypmod) AS type
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped`,
  );
  const types = new Map(rows.map((r) => [r.key, r.type]));
  return (table, column) => types.get(`${table}.${column}`);
}

// A table a statement acts on or refers to (schema.sql's bare names and migra's quoted ones).
const NAMED_TABLE =
  /\b(?:TABLE|ON|REFERENCES)\s+(?:ONLY\s+)?(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(?:"?public"?\.)?"?(\w+)"?/gi;
// The service's units of work append their events last (lib/events.ts): locked last here too.
const LOCKED_LAST = ['event_sequence', 'event_outbox'];

/**
 * The existing tables the statements name, in the order the transaction locks them up front.
 * Taken statement by statement, the plan held each lock while its later statements ran and then
 * waited for the next table: a service transaction holding that table and wanting an earlier one
 * closed a cycle on every retry (bench:upgrade from round 3: 100 retries, all given way, mostly at
 * a policy on `recording`). Taken in one statement, they are all held before any statement runs,
 * and a retry wins as soon as the tables are free together (within 4 tries, in the same bench).
 */
async function tablesToLock(client: pg.Client, statements: string[]): Promise<string[]> {
  const named = new Set(statements.flatMap((s) => [...s.matchAll(NAMED_TABLE)].map((m) => m[1])));
  const { rows } = await client.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace
       AND relkind IN ('r', 'p') AND NOT relispartition AND relname = ANY($1) ORDER BY relname`,
    [[...named]],
  );
  const last = (name: string) => LOCKED_LAST.indexOf(name);
  return rows.map((r) => r.name).sort((a, b) => last(a) - last(b));
}

async function inTransaction(client: pg.Client, statements: string[], lockTimeoutMs?: number): Promise<void> {
  await client.query('BEGIN');
  try {
    if (lockTimeoutMs) {
      await client.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
      const tables = await tablesToLock(client, statements);
      // no guard: the plan's statements take these locks anyway; taking them first only shortens
      // the time the apply holds some while it waits for others (see tablesToLock).
      if (tables.length)
        statements = [`LOCK TABLE ${tables.map((t) => `"${t}"`).join(', ')} IN ACCESS EXCLUSIVE MODE`, ...statements];
    }
    for (const s of statements)
      await client.query(s).catch((err: unknown) => {
        (err as { statement?: string }).statement = s; // which one gave way, for the log
        throw err;
      });
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

const USAGE = 'usage: db:apply [--dry-run] [--allow-destructive] [--wait-older-release SECONDS]';

async function main(argv: string[]): Promise<void> {
  const { values: flags } = (() => {
    try {
      return parseArgs({
        args: argv,
        options: {
          'dry-run': { type: 'boolean' },
          'allow-destructive': { type: 'boolean' },
          'wait-older-release': { type: 'string' },
        },
      });
    } catch (err) {
      throw new Error(`${(err as Error).message}; ${USAGE}`);
    }
  })();
  const wait = flags['wait-older-release'];
  if (wait !== undefined && !/^\d+$/.test(wait)) throw new Error(`--wait-older-release takes whole seconds; ${USAGE}`);
  // Only these variables (and DB_RUNTIME_LOGINS): applying a schema must not need the service's secrets.
  let url = process.env.DATABASE_URL || undefined; // empty counts as unset, as in loadConfig
  // The embedded database has one writer: refuse a DATA_DIR that `npm start` (or another apply) holds.
  const dataDir = path.resolve(process.env.DATA_DIR || '.data');
  const lock = url ? undefined : lockDataDir(dataDir, 'db:apply');
  try {
    const local = url ? undefined : await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'pg') });
    url ??= local!.url;
    try {
      await applySchema(url, {
        dryRun: flags['dry-run'],
        allowDestructive: flags['allow-destructive'],
        waitOlderReleaseMs: wait === undefined ? undefined : Number(wait) * 1000,
        runtimeLogins: parseRuntimeLogins(process.env.DB_RUNTIME_LOGINS),
        log: console.log,
      });
    } finally {
      await local?.stop();
    }
  } finally {
    lock?.release();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode =
      err instanceof DestructiveChangeError
        ? 2
        : err instanceof PreflightError
          ? 3
          : err instanceof OlderReleaseError
            ? 4
            : 1;
  });
}
