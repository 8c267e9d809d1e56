// A checksum of every table (row count + md5 of the ordered rows) in one round trip, to prove
// that a rejected request left the stored data exactly as it was.
import type { Queryable } from '@mi/lib/db/pool';

export type Snapshot = Record<string, string>;

export async function snapshotter(db: Queryable): Promise<() => Promise<Snapshot>> {
  const { rows } = await db.query<{ name: string }>(
    'test.tables',
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  if (!rows.length) throw new Error('no tables to snapshot');
  const sql = rows
    .map(
      ({ name }) =>
        `SELECT '${name}' AS name, count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') AS sum FROM "${name}" t`,
    )
    .join(' UNION ALL ');
  return async () => {
    const res = await db.query<{ name: string; sum: string }>('test.snapshot', sql);
    return Object.fromEntries(res.rows.map((r) => [r.name, r.sum]));
  };
}

/** Tables whose checksum differs. */
export function changedTables(before: Snapshot, after: Snapshot): string[] {
  return Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
}
