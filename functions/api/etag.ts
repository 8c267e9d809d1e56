// Entity tags of single records (meeting, person, task, note) for optimistic concurrency: the
// tag is a hash of the JSON a GET returns, so any change to the record changes it and no version
// column is needed. A PATCH with If-Match checks it against the row it has locked.
import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { DomainError } from '@mi/lib/errors';
import type { AppEnv } from './env';

/** A strong tag of the record as the API renders it (dates as ISO strings). */
export function etagOf(record: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(record)).digest('base64url').slice(0, 27)}"`;
}

export function setEtag(c: Context<AppEnv>, record: unknown): void {
  c.header('ETag', etagOf(record));
}

/**
 * With an If-Match header: 412 unless it is `*` or names the current record's tag (strong
 * comparison, RFC 9110 13.1.1). `current` reads the record FOR UPDATE in the caller's
 * transaction, so nobody can change it between the check and the write. A missing record is
 * left to the caller's 404.
 */
export async function assertIfMatch(c: Context<AppEnv>, current: () => Promise<unknown>): Promise<void> {
  const header = c.req.header('if-match');
  if (header === undefined) return;
  const record = await current();
  if (record === null || header.trim() === '*') return;
  const tag = etagOf(record);
  if (!header.split(',').some((t) => t.trim() === tag)) {
    throw new DomainError('precondition_failed', 'the record changed since it was read (If-Match does not match its ETag); fetch it again and reapply the change');
  }
}
