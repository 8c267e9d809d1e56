// The preflight: before anything is applied, every unique index, check, foreign key and NOT NULL
// the plan adds is tried as a query against the rows already there, and the rows that would make
// it fail are named with the fix. Read-only. A check on a table or column the plan itself creates
// is skipped: its rows come from the data steps, which follow the rules.
import type pg from 'pg';

export interface Offence {
  statement: string;
  table: string;
  /** How many rows (or groups of duplicate rows) violate it. */
  count: number;
  /** Up to SHOWN of them: the primary key (and the duplicated key), as JSON. */
  rows: string[];
  fix: string;
}

export class PreflightError extends Error {
  constructor(readonly offences: Offence[]) {
    super(
      `the data does not satisfy ${offences.length} constraint(s) the plan adds; nothing was applied:\n` +
        offences
          .map((o) => `- ${o.statement}\n  ${o.count} offending in ${o.table}: ${o.rows.join('; ')}\n  fix: ${o.fix}`)
          .join('\n'),
    );
    this.name = 'PreflightError';
  }
}

const SHOWN = 20;
// The object a check names does not exist yet: the plan creates it.
const NOT_YET = new Set(['42P01', '42703', '42883', '3F000']);

const unquote = (name: string) => name.replace(/"/g, '').split('.').pop()!;

/** Splits "a, lower(b), c DESC" at its top-level commas. */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(list.slice(start).trim());
  return parts.filter(Boolean);
}

/** The expression list inside the parentheses that open at `open`, and what follows. */
function parenthesised(s: string, open: number): { inner: string; rest: string } {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')' && --depth === 0) return { inner: s.slice(open + 1, i), rest: s.slice(i + 1) };
  }
  return { inner: s.slice(open + 1), rest: '' };
}

interface Check {
  table: string;
  /** The rows that violate it, one `row` each (JSON); `pk` is the table's key expression. */
  sql: (pk: string) => string;
  fix: string;
}

const UNIQUE_INDEX = new RegExp(
  String.raw`^\s*create\s+unique\s+index\s+(?:concurrently\s+)?(?:if\s+not\s+exists\s+)?\S+\s+` +
    String.raw`on\s+(?:only\s+)?(\S+)\s+(?:using\s+\w+\s*)?\(`,
  'i',
);
const ADD_CONSTRAINT = /^\s*alter\s+table\s+(?:only\s+)?(\S+)\s+add\s+constraint\s+\S+\s+(check|foreign\s+key)\s*\(/i;
const SET_NOT_NULL = /^\s*alter\s+table\s+(?:only\s+)?(\S+)\s+alter\s+column\s+("[^"]+"|\w+)\s+set\s+not\s+null/i;

/** The check a plan statement implies, if any. */
export function checkFor(statement: string): Check | undefined {
  const unique = UNIQUE_INDEX.exec(statement);
  if (unique) {
    const table = unquote(unique[1]);
    const { inner, rest } = parenthesised(statement, unique[0].length - 1);
    const keys = splitTopLevel(inner).map((k) => k.replace(/\s+(asc|desc)?\s*(nulls\s+(first|last))?\s*$/i, '').trim());
    const where = /\bwhere\s+(.+?);?\s*$/is.exec(rest)?.[1];
    const filter = [...keys.map((k) => `(${k}) IS NOT NULL`), ...(where ? [`(${where})`] : [])].join(' AND ');
    return {
      table,
      sql: (pk) => `SELECT json_build_object('key', json_build_array(${keys.join(', ')}),
                                           'rows', json_agg(${pk}))::text AS row
                    FROM ${unique[1]} c WHERE ${filter} GROUP BY ${keys.join(', ')} HAVING count(*) > 1`,
      fix:
        `make (${keys.join(', ')}) distinct in each group: change or merge the duplicate rows, ` +
        'then run db:apply again',
    };
  }
  const addConstraint = ADD_CONSTRAINT.exec(statement);
  if (addConstraint) {
    const table = unquote(addConstraint[1]);
    const { inner, rest } = parenthesised(statement, addConstraint[0].length - 1);
    if (/^check/i.test(addConstraint[2])) {
      return {
        table,
        sql: (pk) => `SELECT ${pk}::text AS row FROM ${addConstraint[1]} c WHERE NOT (${inner})`,
        fix: `update these rows so that ${inner.trim()} holds (or delete them), then run db:apply again`,
      };
    }
    const ref = /^\s*references\s+(\S+)\s*\(([^)]*)\)/i.exec(rest);
    if (!ref) return undefined;
    const cols = splitTopLevel(inner);
    const refCols = splitTopLevel(ref[2]);
    const matches = cols.map((c, i) => `p.${refCols[i]} = c.${c}`).join(' AND ');
    return {
      table,
      sql: (pk) => `SELECT ${pk}::text AS row FROM ${addConstraint[1]} c
                    WHERE ${cols.map((c) => `c.${c} IS NOT NULL`).join(' AND ')}
                      AND NOT EXISTS (SELECT 1 FROM ${ref[1]} p WHERE ${matches})`,
      fix:
        `point ${cols.join(', ')} of these rows at existing ${unquote(ref[1])} rows, or set it null ` +
        'or delete the rows',
    };
  }
  const notNull = SET_NOT_NULL.exec(statement);
  if (notNull) {
    return {
      table: unquote(notNull[1]),
      sql: (pk) => `SELECT ${pk}::text AS row FROM ${notNull[1]} c WHERE ${notNull[2]} IS NULL`,
      fix:
        `fill ${unquote(notNull[2])} on these rows (or give the column a default in schema.sql), ` +
        'then run db:apply again',
    };
  }
  return undefined;
}

/** The primary key of a table (aliased c) as a json_build_object(...) expression, else its ctid. */
async function rowKey(client: pg.Client, table: string): Promise<string> {
  const { rows } = await client.query<{ attname: string }>(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
    [`public.${table}`],
  );
  if (!rows.length) return `json_build_object('ctid', c.ctid)`;
  return `json_build_object(${rows.map((r) => `'${r.attname}', c."${r.attname}"`).join(', ')})`;
}

/** Every offence of the plan against the data as it is; [] when the plan can be applied. */
export async function preflight(client: pg.Client, statements: string[]): Promise<Offence[]> {
  const offences: Offence[] = [];
  await client.query('BEGIN TRANSACTION READ ONLY');
  try {
    await checkAll(client, statements, offences);
  } finally {
    await client.query('ROLLBACK');
  }
  return offences;
}

async function checkAll(client: pg.Client, statements: string[], offences: Offence[]): Promise<void> {
  for (const statement of statements) {
    const check = checkFor(statement);
    if (!check) continue;
    const offending = check.sql(await rowKey(client, check.table));
    const sql = `SELECT row, count(*) OVER ()::int AS total FROM (${offending}) o LIMIT ${SHOWN}`;
    try {
      await client.query('SAVEPOINT preflight');
      const { rows } = await client.query<{ row: string; total: number }>(sql);
      await client.query('RELEASE SAVEPOINT preflight');
      if (rows.length) {
        const shown = rows.map((r) => r.row);
        offences.push({ statement, table: check.table, count: rows[0].total, rows: shown, fix: check.fix });
      }
    } catch (err) {
      await client.query('ROLLBACK TO SAVEPOINT preflight');
      if (!NOT_YET.has((err as { code?: string }).code ?? '')) throw err;
    }
  }
}
