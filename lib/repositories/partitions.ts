// Daily partitions of event_outbox (decision 0010): created ahead by the sweep and db:apply,
// dropped by retention once their whole day is past the window. A partition is created empty and
// then attached: ATTACH locks the parent SHARE UPDATE EXCLUSIVE, so writers and readers go on
// (CREATE TABLE … PARTITION OF would lock it exclusively). Bounds are UTC days. Both steps run in
// schema.sql's attach_outbox_day and drop_outbox_day (named apart from the table, which db:apply's
// diff leaves to its conversion), with the owner's rights the sweep lacks.
import type { Database, Queryable } from '../db/pool';

export const PARTITIONED_TABLES = ['event_outbox'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** Days of partitions kept ready past today: a sweep outage this long still inserts into a day's partition. */
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
const nameFor = (table: string, from: Date) => `${table}_p${day(from).replace(/-/g, '')}`;

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
 * Creates the missing daily partitions from today through PARTITION_DAYS_AHEAD days ahead.
 * A day the default partition already holds rows of is left to the default (attaching it would
 * fail); a day another partition overlaps (the converted table's range) is skipped too.
 * Returns the partitions created.
 */
export async function ensurePartitions(db: Database, table: PartitionedTable, now = new Date()): Promise<string[]> {
  const existing = await listPartitions(db, table);
  const ranges = existing
    .filter((p) => p.from !== null)
    .map((p) => [Date.parse(p.from || '-infinity'), p.to ? Date.parse(p.to) : Infinity]);
  const created: string[] = [];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = 0; i <= PARTITION_DAYS_AHEAD; i++) {
    const from = new Date(today + i * 86_400_000);
    const to = new Date(from.getTime() + 86_400_000);
    if (ranges.some(([a, b]) => (Number.isNaN(a) || a < to.getTime()) && b > from.getTime())) continue;
    const name = nameFor(table, from);
    const attached = await inTransaction(db, async (tx) => {
      await tx.query('partitions.attach', 'SELECT attach_outbox_day($1::date)', [day(from)]);
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
 * Drops each day's partition whose whole range is older than the window, unless `held` finds a row
 * in it that must stay; returns the dropped partitions and those held (their rows are deleted by
 * age as the default partition's are).
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
      if (!isHeld) await tx.query('partitions.drop', 'SELECT drop_outbox_day($1)', [p.name]);
    });
    if (isHeld) result.held.push(p.name);
    else if (dropped) result.dropped.push(p.name);
  }
  return result;
}
