// Rows that name given ids, over every table and every uuid, uuid[] and text column that
// information_schema lists: a test of erasure or purge cannot forget a table added later.
import type { Queryable } from '@mi/lib/db/pool';

interface Column {
  table: string;
  column: string;
  kind: 'uuid' | 'uuid[]' | 'text';
}

/** Every column that can hold an id (uuid, uuid[], text such as idempotency_record.principal). */
async function idColumns(db: Queryable): Promise<Column[]> {
  const { rows } = await db.query<{ table: string; column: string; data_type: string; udt_name: string }>(
    'test.id_columns',
    `SELECT c.table_name AS table, c.column_name AS column, c.data_type, c.udt_name
     FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.udt_name IN ('uuid', '_uuid', 'text')
     ORDER BY 1, 2`,
  );
  return rows.map((r) => ({
    table: r.table,
    column: r.column,
    kind: r.udt_name === 'uuid' ? 'uuid' : r.udt_name === '_uuid' ? 'uuid[]' : 'text',
  }));
}

/** Every uuid value stored anywhere (uuid and uuid[] columns). */
export async function allIds(db: Queryable): Promise<Set<string>> {
  const out = new Set<string>();
  for (const c of await idColumns(db)) {
    if (c.kind === 'text') continue;
    const expr = c.kind === 'uuid' ? `"${c.column}"` : `unnest("${c.column}")`;
    const { rows } = await db.query<{ v: string }>(
      'test.ids',
      `SELECT DISTINCT ${expr}::text AS v FROM "${c.table}" WHERE "${c.column}" IS NOT NULL`,
    );
    for (const r of rows) if (r.v) out.add(r.v);
  }
  return out;
}

/** "table.column: n" for every column of every table holding one of the ids (none: []). */
export async function rowsNaming(db: Queryable, ids: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const c of await idColumns(db)) {
    const where =
      c.kind === 'uuid'
        ? `"${c.column}"::text = ANY($1)`
        : c.kind === 'uuid[]'
          ? `"${c.column}"::text[] && $1`
          : `"${c.column}" = ANY($1)`;
    const { rows } = await db.query<{ n: number }>(
      'test.naming',
      `SELECT count(*)::int AS n FROM "${c.table}" WHERE ${where}`,
      [ids],
    );
    if (rows[0].n) found.push(`${c.table}.${c.column}: ${rows[0].n}`);
  }
  return found;
}
