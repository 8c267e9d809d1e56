// `npm run db:apply [--dry-run] [--allow-destructive]`: bring a database to the state of
// schema/schema.sql. The target state is loaded into a scratch in-memory PGlite, migra diffs
// the live database against it, and the plan is applied in one transaction. Destructive
// statements are refused unless allowed. Target: DATABASE_URL, else the local stack's
// file-backed PGlite under DATA_DIR/pg, refused while `npm start` holds DATA_DIR (its lock file).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { createClient } from '@pgkit/client';
import { run as migra } from '@pgkit/migra';
import { lockDataDir } from '../lib/db/data-dir-lock';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../lib/db/embedded';
import { destructiveStatements } from './destructive';

export const SCHEMA_SQL_PATH = fileURLToPath(new URL('./schema.sql', import.meta.url));
/** Idempotent data steps appended to a non-empty plan (a diff cannot backfill a new column). */
export const BACKFILL_SQL_PATH = fileURLToPath(new URL('./backfill.sql', import.meta.url));

export interface ApplyOptions {
  allowDestructive?: boolean;
  dryRun?: boolean;
  log?: (line: string) => void;
}

export class DestructiveChangeError extends Error {
  constructor(readonly statements: string[]) {
    super(`refusing ${statements.length} destructive statement(s) without --allow-destructive:\n${statements.join('\n')}`);
    this.name = 'DestructiveChangeError';
  }
}

/**
 * Brings the database at targetUrl to schema.sql. An empty database (nothing in schema
 * public but extensions) gets schema.sql itself, which is what the diff would produce
 * anyway, in a fraction of the time: every test database starts this way.
 */
export async function applySchema(targetUrl: string, opts: ApplyOptions = {}): Promise<{ statements: string[]; applied: boolean }> {
  const log = opts.log ?? (() => {});
  const schemaSql = readFileSync(SCHEMA_SQL_PATH, 'utf8');
  const target = new pg.Client({ connectionString: targetUrl });
  await target.connect();
  try {
    if (!opts.dryRun && (await isEmpty(target))) {
      log('-- empty database: running schema.sql');
      await inTransaction(target, [schemaSql]);
      return { statements: [schemaSql], applied: true };
    }
    const diff = await plan(target, targetUrl, schemaSql);
    const statements = diff.length ? [...diff, readFileSync(BACKFILL_SQL_PATH, 'utf8').trim()] : diff;
    const destructive = destructiveStatements(statements);
    for (const s of statements) log(destructive.includes(s) ? `-- DESTRUCTIVE\n${s}` : s);
    log(statements.length ? `-- ${statements.length} statement(s)` : '-- schema is up to date');
    if (opts.dryRun || statements.length === 0) return { statements, applied: false };
    if (destructive.length && !opts.allowDestructive) throw new DestructiveChangeError(destructive);
    await inTransaction(target, statements);
    log('-- applied');
    return { statements, applied: true };
  } finally {
    await target.end();
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
  const scratch = await startEmbeddedPostgres();
  // pg-promise warns about a second client for one URL; these are short-lived and ours.
  const clientOptions = { pgpOptions: { initialize: { noWarnings: true } } };
  const live = createClient(liveUrl, clientOptions);
  const desired = createClient(scratch.url, clientOptions);
  try {
    await scratch.db.exec(schemaSql);
    // unsafe: let migra emit drops; this tool decides what is destructive itself.
    // ignoreExtensionVersions: pgvector in PGlite and on Cloud SQL differ in version only.
    const migration = await migra(live, desired, { unsafe: true, schema: 'public', ignoreExtensionVersions: true });
    const statements = migration.statements.array.map((s) => s.trim()).filter(Boolean);
    return [...statements, ...(await storageParameterStatements(liveClient, scratch.db))];
  } finally {
    await Promise.allSettled([live.end(), desired.end()]);
    await scratch.stop();
  }
}

const TABLE_OPTIONS = `SELECT relname AS name, coalesce(reloptions, '{}') AS options FROM pg_class
  WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY relname`;

/** migra ignores tables' storage parameters (fillfactor); these bring them to schema.sql's. */
async function storageParameterStatements(live: pg.Client, desired: EmbeddedPostgres['db']): Promise<string[]> {
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

async function inTransaction(client: pg.Client, statements: string[]): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const s of statements) await client.query(s);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Set(argv);
  const unknown = [...flags].filter((f) => f !== '--dry-run' && f !== '--allow-destructive');
  if (unknown.length) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: db:apply [--dry-run] [--allow-destructive]`);
  // Only these two variables: applying a schema must not need the service's secrets.
  let url = process.env.DATABASE_URL || undefined; // empty counts as unset, as in loadConfig
  // The embedded database has one writer: refuse a DATA_DIR that `npm start` (or another apply) holds.
  const dataDir = path.resolve(process.env.DATA_DIR || '.data');
  const lock = url ? undefined : lockDataDir(dataDir, 'db:apply');
  try {
    const local = url ? undefined : await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'pg') });
    url ??= local!.url;
    try {
      await applySchema(url, { dryRun: flags.has('--dry-run'), allowDestructive: flags.has('--allow-destructive'), log: console.log });
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
    process.exitCode = err instanceof DestructiveChangeError ? 2 : 1;
  });
}
