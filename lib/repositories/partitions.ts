// Time partitions (decision 0010): event_outbox by UTC day, segment_manifest by UTC month.
// Created ahead by the sweep and db:apply; dropped once their whole period is past (the outbox's
// retention window; the manifest's, which has none, only when empty). A partition is created
// empty and then attached: ATTACH locks the parent SHARE UPDATE EXCLUSIVE, so writers and readers
// go on (CREATE TABLE … PARTITION OF would lock it exclusively). Both steps run in schema.sql's
// attach_partition and drop_partition (named apart from the tables, which db:apply's diff leaves
// to its conversion), with the owner's rights the sweep lacks.
import type { Database, Queryable } from '../db/pool';

export const PARTITIONED_TABLES = ['event_outbox', 'segment_manifest'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** Each table's period (schema.sql's partition_unit). */
export const PARTITION_UNIT: Record<PartitionedTable, 'day' | 'month'> = {
  event_outbox: 'day',
  segment_manifest: 'month',
};

/** Days of partitions kept ready past today: a sweep outage this long still inserts into a period's partition. */
export const PARTITION_DAYS_AHEAD = 7;
/** How long partition DDL waits for a lock before giving way to the service (the next pass retries). */
export const PARTITION_LOCK_TIMEOUT_MS = 500;

export interface Partition {
  name: string;
  /** null: the default partition; '' bounds: MINVALUE / MAXVALUE. */
  from: string | null;
  to: string | null;
}

const day = (d: Date) => d.toISOString().slice(0, 10);
/** The UTC period of `unit` starting `n` periods after the one holding `at`: [from, to) in ms. */
function period(unit: 'day' | 'month', at: Date, n: number): [number, number] {
  const [y, m, d] = [at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()];
  return unit === 'day'
    ? [Date.UTC(y, m, d + n), Date.UTC(y, m, d + n + 1)]
    : [Date.UTC(y, m + n), Date.UTC(y, m + n + 1)];
}

/** The table's partitions with their bounds (timestamps as text), oldest first, the default last. */
export async function listPartitions(q: Queryable, table: PartitionedTable): Promise<Partition[]> {
  const { rows } = await q.query<{ name: string; bound: string }>(
    'partitions.list',
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [`public.${table}`],
  );
  // 'YYYY-MM-DD HH:MM:SS+HH' (the session's time zone) as ISO 8601; MINVALUE / MAXVALUE as ''.
  const bound = (s: string | undefined) =>
    s === undefined || /^(MIN|MAX)VALUE$/.test(s)
      ? ''
      : s
          .replace(/^'|'$/g, '')
          .replace(' ', 'T')
          .replace(/([+-]\d\d)$/, '$1:00');
  return rows
    .map(({ name, bound: b }) => {
      if (b === 'DEFAULT') return { name, from: null, to: null };
      const [, from, to] = /FROM \((.*)\) TO \((.*)\)/.exec(b) ?? [];
      return { name, from: bound(from), to: bound(to) };
    })
    .sort((a, b) =>
      a.from === null ? 1 : b.from === null ? -1 : Date.parse(a.from || '0') - Date.parse(b.from || '0'),
    );
}

/**
 * Creates the missing partitions of the periods from today's through PARTITION_DAYS_AHEAD days
 * ahead. A period the default partition already holds rows of is left to the default (attaching
 * it would fail); a period another partition overlaps (the converted table's range) is skipped too.
 * Returns the partitions created.
 */
export async function ensurePartitions(db: Database, table: PartitionedTable, now = new Date()): Promise<string[]> {
  const existing = await listPartitions(db, table);
  // None, not even the default: the table is plain still, its conversion deferred (schema/rollout.ts).
  if (!existing.length) return [];
  const ranges = existing
    .filter((p) => p.from !== null)
    .map((p) => [Date.parse(p.from || '-infinity'), p.to ? Date.parse(p.to) : Infinity]);
  const created: string[] = [];
  const last = now.getTime() + PARTITION_DAYS_AHEAD * 86_400_000;
  const unit = PARTITION_UNIT[table];
  for (let i = 0; ; i++) {
    const [from, to] = period(unit, now, i);
    if (from > last) break;
    if (ranges.some(([a, b]) => (Number.isNaN(a) || a < to) && b > from)) continue;
    let name = '';
    const attached = await inTransaction(db, async (tx) => {
      const { rows } = await tx.query<{ name: string }>(
        'partitions.attach',
        'SELECT attach_partition($1, $2::date) AS name',
        [table, day(new Date(from))],
      );
      name = rows[0].name;
    });
    if (attached) created.push(name);
  }
  return created;
}

/**
 * Runs `body` in a transaction with a short lock timeout; false (rolled back) when it waited too
 * long for a lock or the default partition holds rows of the range (23514): the next pass retries.
 */
async function inTransaction(db: Database, body: (tx: Queryable) => Promise<void>): Promise<boolean> {
  try {
    await db.withTransaction(async (tx) => {
      await tx.query('partitions.lock_timeout', `SET LOCAL lock_timeout = ${PARTITION_LOCK_TIMEOUT_MS}`);
      await body(tx);
    });
    return true;
  } catch (err) {
    if (['55P03', '23514', '40P01'].includes((err as { code?: string }).code ?? '')) return false;
    throw err;
  }
}

/**
 * Drops each partition whose whole period is older than the window, unless `held` finds a row in
 * it that must stay; returns the dropped partitions and those held (the outbox deletes their rows
 * by age as the default partition's).
 */
export async function dropExpiredPartitions(
  db: Database,
  table: PartitionedTable,
  retentionHours: number,
  held: (partition: string) => string,
): Promise<{ dropped: string[]; held: string[] }> {
  const { rows } = await db.query<{ cutoff: number }>(
    'partitions.cutoff',
    'SELECT extract(epoch FROM now() - make_interval(hours => $1))::float8 * 1000 AS cutoff',
    [retentionHours],
  );
  const cutoff = rows[0].cutoff;
  const result = { dropped: [] as string[], held: [] as string[] };
  for (const p of await listPartitions(db, table)) {
    if (p.from === null || !p.to || Date.parse(p.to) > cutoff) continue;
    let isHeld = false;
    const dropped = await inTransaction(db, async (tx) => {
      // Checked in the transaction that drops, as the DELETE checks each row in its own statement.
      isHeld = (await tx.query<{ held: boolean }>('partitions.held', `SELECT EXISTS (${held(p.name)}) AS held`)).rows[0]
        .held;
      // guard: outbox-partition-held | remove: if (!isHeld) | test: test/sweep.test.ts :: keep a day a webhook's cursor holds
      if (!isHeld) await tx.query('partitions.drop', 'SELECT drop_partition($1, $2)', [table, p.name]);
    });
    if (isHeld) result.held.push(p.name);
    else if (dropped) result.dropped.push(p.name);
  }
  return result;
}

/** The manifest's months wholly past and empty: they hold nothing (its rows go only with their meeting). */
export const dropEmptyManifestPartitions = (db: Database) =>
  dropExpiredPartitions(db, 'segment_manifest', 0, (partition) => `SELECT 1 FROM "${partition}"`);
