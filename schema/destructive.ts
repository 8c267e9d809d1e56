// Which statements of a migra plan can lose data: dropping a table, a column, a type, a sequence
// or an extension, and changing a column to a type that cannot hold every value of the old one.
// Indexes, constraints, triggers, functions and views hold no data: dropping or renaming them is
// not destructive (the preflight checks the data against what the plan adds instead).

const DROPS_DATA = [
  /^\s*drop\s+(table|type|sequence|extension|schema|materialized\s+view)\b/i,
  /\bdrop\s+column\b/i,
  /^\s*truncate\b/i,
];

const TYPE_CHANGE = new RegExp(
  String.raw`^\s*alter\s+table\s+("?[\w.$"]+)\s+alter\s+column\s+("[^"]+"|\w+)\s+` +
    String.raw`(?:set\s+data\s+)?type\s+(.+?)(?:\s+using\s+.*)?;?\s*$`,
  'is',
);

const unquote = (name: string) => name.replace(/"/g, '').split('.').pop()!.toLowerCase();

/** The current type of a column as format_type prints it, or undefined when unknown. */
export type ColumnTypes = (table: string, column: string) => string | undefined;

const INTEGERS = ['smallint', 'integer', 'bigint'];

/** True when every value of type `from` converts to type `to` without loss. */
export function isWidening(from: string, to: string): boolean {
  const a = from.trim().toLowerCase();
  const b = to.trim().toLowerCase();
  if (a === b) return true;
  const varchar = (t: string) => /^(?:character varying|varchar)(?:\((\d+)\))?$/.exec(t);
  const numeric = (t: string) => /^numeric(?:\((\d+)(?:,\s*(\d+))?\))?$/.exec(t);
  if (b === 'text') return a === 'text' || !!varchar(a) || /^(character|char)\b/.test(a);
  const [va, vb] = [varchar(a), varchar(b)];
  if (va && vb) return !vb[1] || (!!va[1] && Number(va[1]) <= Number(vb[1]));
  if (INTEGERS.includes(a) && INTEGERS.includes(b)) return INTEGERS.indexOf(a) <= INTEGERS.indexOf(b);
  if (INTEGERS.includes(a) && b === 'numeric') return true;
  if (a === 'real' && b === 'double precision') return true;
  const [na, nb] = [numeric(a), numeric(b)];
  if (!na || !nb) return false;
  if (!nb[1]) return true; // unconstrained numeric holds any numeric
  if (!na[1]) return false;
  const [pa, sa, pb, sb] = [na[1], na[2] ?? 0, nb[1], nb[2] ?? 0].map(Number);
  return pa - sa <= pb - sb && sa <= sb;
}

/** The statements that need --allow-destructive. A type change of an unknown column counts. */
export function destructiveStatements(statements: string[], columnTypes: ColumnTypes = () => undefined): string[] {
  return statements.filter((s) => {
    if (DROPS_DATA.some((re) => re.test(s))) return true;
    const change = TYPE_CHANGE.exec(s);
    if (!change) return false;
    const from = columnTypes(unquote(change[1]), unquote(change[2]));
    return from === undefined || !isWidening(from, change[3]);
  });
}
