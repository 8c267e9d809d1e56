// Entity tags of single records (meeting, person, task, note) for optimistic concurrency: the
// tag is a hash of the JSON a GET returns, so any change to the record changes it and no version
// column is needed. A PATCH with If-Match checks it against the row it has locked.
import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { DomainError } from '@mi/lib/errors';
import type { Precondition } from '@mi/lib/use-cases/use-case';
import type { AppEnv } from './env';

/** A strong tag of the record as the API renders it (dates as ISO strings). */
export function etagOf(record: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(record)).digest('base64url').slice(0, 27)}"`;
}

export function setEtag(c: Context<AppEnv>, record: unknown): void {
  c.header('ETag', etagOf(record));
}

/**
 * With an If-Match header: the precondition a use case checks on the record it read FOR UPDATE in
 * its transaction (so nobody can change it between the check and the write): 412 unless the
 * header is `*` or names the current record's tag (strong comparison, RFC 9110 13.1.1). Without
 * the header there is nothing to check (and nothing is read). A missing record is left to the
 * use case's 404.
 */
export function ifMatch(c: Context<AppEnv>): Precondition | undefined {
  const header = c.req.header('if-match');
  if (header === undefined) return undefined;
  return (record) => {
    if (record === null || header.trim() === '*') return;
    const tag = etagOf(record);
    if (!header.split(',').some((t) => t.trim() === tag)) {
      throw new DomainError(
        'version_mismatch',
        'the record changed since it was read (If-Match does not match its ETag); fetch it again and reapply the change',
      );
    }
  };
}
