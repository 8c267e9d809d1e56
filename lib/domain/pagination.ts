// Keyset pagination with an opaque cursor: base64url of the last row's sort key.
import { UUID_PATTERN } from '../async';
import { DomainError } from '../errors';

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** The one answer to a cursor this API did not hand out. */
export const invalidCursor = () =>
  new DomainError('bad_request', 'cursor is not valid; use next_cursor from a previous page');

export function encodeCursor(key: unknown[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** Decodes a cursor made by `encodeCursor` with `arity` parts; anything else is a 400. */
export function decodeCursor(cursor: string | undefined, arity: number): unknown[] | null {
  if (cursor === undefined) return null;
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(key) && key.length === arity && key.every((k) => typeof k === 'string' || typeof k === 'number'))
      return key;
  } catch {
    // fall through
  }
  throw invalidCursor();
}

/** A page is cut short (with a next_cursor) rather than exceed this, serialised (decisions.md section 6). */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Fetch limit + 1 rows, then call this: it trims to `limit`, or fewer where the items would
 * pass MAX_PAGE_BYTES (never fewer than one), and builds next_cursor from the last item kept.
 */
export function toPage<T>(rows: T[], limit: number, keyOf: (row: T) => unknown[]): Page<T> {
  let bytes = 0;
  let kept = 0;
  while (kept < Math.min(limit, rows.length)) {
    bytes += Buffer.byteLength(JSON.stringify(rows[kept]));
    if (kept > 0 && bytes > MAX_PAGE_BYTES) break;
    kept++;
  }
  const items = rows.slice(0, kept);
  return { items, next_cursor: kept < rows.length ? encodeCursor(keyOf(items[items.length - 1])) : null };
}

/** A cursor holding the last row's id (the sort key is read back from that row in SQL). */
export function decodeIdCursor(cursor: string | undefined): string | null {
  const key = decodeCursor(cursor, 1);
  if (key && !(typeof key[0] === 'string' && UUID_PATTERN.test(key[0]))) throw invalidCursor();
  return key ? (key[0] as string) : null;
}

// Lists in creation order page on (created_at, id), read straight from an index over
// (owner, created_at, id). The cursor carries created_at to the microsecond, as Postgres
// stores it: a JavaScript Date would round it to the millisecond and skip or repeat rows.

/** The select-list item giving each row its page key (`page_key`); `alias` is a table alias with its dot. */
export const createdKey = (alias = '') =>
  `to_char(${alias}created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS page_key`;

const CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** The (created_at, id) a creation-order cursor names, as SQL parameters; nulls for the first page. */
export function decodeCreatedCursor(cursor: string | undefined): [string | null, string | null] {
  const key = decodeCursor(cursor, 2);
  if (!key) return [null, null];
  if (
    !(typeof key[0] === 'string' && CREATED_AT.test(key[0]) && typeof key[1] === 'string' && UUID_PATTERN.test(key[1]))
  ) {
    throw invalidCursor();
  }
  return [key[0], key[1]];
}

/** `toPage` for rows selected with `createdKey()` (`idOf` names the tie-breaking key): the page key leaves the items. */
export function toCreatedPage<T extends { page_key: string }>(
  rows: T[],
  limit: number,
  idOf: (row: Omit<T, 'page_key'>) => string = (r) => (r as unknown as { id: string }).id,
): Page<Omit<T, 'page_key'>> {
  const items = rows.map(({ page_key: _, ...item }) => item);
  const keys = new Map(items.map((item, i) => [item, rows[i].page_key]));
  return toPage(items, limit, (item) => [keys.get(item)!, idOf(item)]);
}
