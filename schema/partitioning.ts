// Converting a plain table that schema.sql partitions by time (event_outbox, segment_manifest,
// decision 0010) while the service writes to it. A diff would drop and recreate the table; instead
// the table becomes the new parent's partition for everything before a cutover:
//  1. a CHECK (created_at < cutover), added NOT VALID and validated (writers go on), so that the
//     ATTACH below need not scan the table under its lock; the cutover is the start of the second
//     period (UTC day or month) from a day ahead, so rows written until the swap (and after it,
//     until then) still belong to it, and the periods after it get partitions of their own;
//  2. unique indexes holding the partition key, built beside the old keys (CONCURRENTLY on a
//     large table);
//  3. one short transaction: the old keys swapped for those indexes, the table and its indexes
//     renamed, schema.sql's statements of the table run (the parent, its default partition, its
//     indexes: they adopt the old table's identical indexes, and its foreign key, without a build),
//     and the old table attached for [MINVALUE, cutover).
// Retention drops that partition whole once the cutover is past the window (the manifest's: once empty).
import type pg from 'pg';
import { PARTITION_UNIT, type PartitionedTable } from '../lib/repositories/partitions';

/** Per table: the partition key column and the partitioned table's unique keys (constraint name suffix, columns). */
const CONVERTED: Record<PartitionedTable, { column: string; keys: Record<string, string> }> = {
  event_outbox: { column: 'created_at', keys: { pkey: 'id, created_at', user_id_seq_key: 'user_id, seq, created_at' } },
  segment_manifest: {
    column: 'created_at',
    keys: { pkey: 'id, created_at', range_key: 'meeting_id, audio_version, start_sequence, end_sequence, created_at' },
  },
};

export interface Conversion {
  table: string;
  /** Run outside any transaction, one at a time (index builds, the validation). */
  online: string[];
  /** The swap, one transaction. */
  swap: string[];
}

/** The conversions the live database needs: tables schema.sql partitions that are plain here. */
export async function plannedConversions(
  client: pg.Client,
  schemaSql: string,
  isLarge: (table: string) => Promise<boolean>,
): Promise<Conversion[]> {
  const out: Conversion[] = [];
  for (const [table, spec] of Object.entries(CONVERTED) as [PartitionedTable, (typeof CONVERTED)[PartitionedTable]][]) {
    const { rows } = await client.query<{ kind: string }>(
      `SELECT relkind AS kind FROM pg_class WHERE oid = to_regclass($1)`,
      [`public.${table}`],
    );
    if (rows[0]?.kind !== 'r') continue;
    const { rows: at } = await client.query<{ cutover: string; day: string }>(
      `SELECT to_char(d, 'YYYY-MM-DD"T00:00:00Z"') AS cutover, to_char(d, 'YYYYMMDD') AS day
         FROM (SELECT date_trunc($1, now() AT TIME ZONE 'UTC' + interval '1 day') + ('1 ' || $1)::interval AS d) x`,
      [PARTITION_UNIT[table]],
    );
    const { cutover, day } = at[0];
    const old = `${table}_before_${day}`;
    const check = `${table}_partition_check`;
    const concurrently = (await isLarge(table)) ? ' CONCURRENTLY' : '';
    const { rows: indexes } = await client.query<{ name: string }>(
      `SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = to_regclass($1) AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)`,
      [`public.${table}`],
    );
    const { rows: keys } = await client.query<{ name: string; type: string }>(
      `SELECT conname AS name, contype AS type FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype IN ('p', 'u', 'f')`,
      [`public.${table}`],
    );
    const keyIndexes = Object.entries(spec.keys).map(([suffix, columns]) => ({
      name: `${old}_${suffix}`,
      columns,
      primary: suffix === 'pkey',
    }));
    out.push({
      table,
      online: [
        `ALTER TABLE "${table}" DROP CONSTRAINT IF EXISTS "${check}"`,
        `ALTER TABLE "${table}" ADD CONSTRAINT "${check}" CHECK (${spec.column} < '${cutover}') NOT VALID`,
        `ALTER TABLE "${table}" VALIDATE CONSTRAINT "${check}"`,
        ...keyIndexes.map(
          (k) => `CREATE UNIQUE INDEX${concurrently} IF NOT EXISTS "${k.name}" ON "${table}" (${k.columns})`,
        ),
      ],
      swap: [
        // no guard: the swap's statements take this lock anyway; taking it first (within the
        // lock timeout) keeps it from being upgraded midway, a deadlock with the service's writers.
        `LOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE`,
        ...keys.filter((k) => k.type !== 'f').map((k) => `ALTER TABLE "${table}" DROP CONSTRAINT "${k.name}"`),
        // Constraint names are chosen unique in the schema: the parent's foreign keys keep theirs.
        ...keys
          .filter((k) => k.type === 'f')
          .map((k) => `ALTER TABLE "${table}" RENAME CONSTRAINT "${k.name}" TO "${old}${k.name.slice(table.length)}"`),
        ...keyIndexes.map(
          (k) =>
            `ALTER TABLE "${table}" ADD CONSTRAINT "${k.name}" ${k.primary ? 'PRIMARY KEY' : 'UNIQUE'} USING INDEX "${k.name}"`,
        ),
        ...indexes
          .filter((i) => !keyIndexes.some((k) => k.name === i.name))
          .map((i) => `ALTER INDEX "${i.name}" RENAME TO "${old}${i.name.slice(table.length)}"`),
        `ALTER TABLE "${table}" RENAME TO "${old}"`,
        ...statementsOf(schemaSql, table),
        `ALTER TABLE "${table}" ATTACH PARTITION "${old}" FOR VALUES FROM (MINVALUE) TO ('${cutover}')`,
        `ALTER TABLE "${old}" DROP CONSTRAINT "${check}"`,
      ],
    });
  }
  return out;
}

/**
 * schema.sql's statements that create the table or act on it (its partitions, indexes), or with
 * `policies`, only those of its row security: these name functions the plan may create first, so
 * they run after the plan's statements.
 */
export function statementsOf(schemaSql: string, table: string, policies = false): string[] {
  // Function bodies ($$ … $$) hold statements of their own: kept whole, and left out below.
  const withoutComments = schemaSql.replace(/--[^\n]*/g, '').replace(/\$\$[\s\S]*?\$\$/g, '$$$$$$$$');
  const acts = new RegExp(`\\b(TABLE|ON|OF)\\s+(IF\\s+(NOT\\s+)?EXISTS\\s+)?${table}\\b`, 'i');
  return withoutComments
    .split(/;\s*\n/)
    .map((s) => s.trim())
    .filter((s) => s && acts.test(s) && !/\$\$/.test(s))
    .filter((s) => /\b(POLICY|ROW LEVEL SECURITY)\b/i.test(s) === policies);
}

/** Whether a plan statement names the table or one of its partitions or indexes. */
export const namesTable = (statement: string, table: string) =>
  statement.includes(`"public"."${table}`) ||
  statement.includes(` public.${table}`) ||
  statement.startsWith(`ALTER TABLE ${table} `); // apply.ts's row security statements
