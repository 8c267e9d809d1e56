// Idempotency-Key as decisions.md section 3 (IETF draft semantics). A short transaction claims
// the key (an in-flight marker, so a concurrent duplicate answers 409 instead of running twice);
// the final response is written by `commit` in the same transaction as the effect. A failed
// request releases the marker so the client may retry with the same key.
import { UUID_PATTERN } from '@mi/lib/async';
import { createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { DomainError } from '@mi/lib/errors';
import type { Queryable } from '@mi/lib/db/pool';
import type { AppEnv, IdempotencyClaim } from '../env';
import { RAW_BODY_TYPE } from './body-limit';

const TTL = '24 hours';
/** An in-flight marker older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER = '2 minutes';

interface StoredRecord {
  request_hash: string;
  state: 'in_flight' | 'done';
  abandoned: boolean;
  response_status: number | null;
  response_body: unknown;
  response_headers: Record<string, string> | null;
  response_raw: string | null;
}

/** Idempotency-Key honoured when sent: a request without one simply runs (the ML's segment append). */
export const optionallyIdempotent: MiddlewareHandler<AppEnv> = (c, next) =>
  c.req.header('idempotency-key') === undefined ? next() : idempotent(c, next);

export const idempotent: MiddlewareHandler<AppEnv> = async (c, next) => {
  const key = c.req.header('idempotency-key');
  if (!key) throw new DomainError('bad_request', 'Idempotency-Key header is required for this operation');
  if (!UUID_PATTERN.test(key)) throw new DomainError('bad_request', 'Idempotency-Key must be a uuid');
  const { db } = c.var.deps;
  const principal = c.var.principal.userId ?? 'service';
  // Raw bodies are not bounded by the app's body limit; no idempotent operation takes one, so
  // refuse it rather than read it whole.
  if (RAW_BODY_TYPE.test(c.req.header('content-type') ?? ''))
    throw new DomainError('unsupported_format', 'this operation takes a JSON body');
  const body = await c.req.text(); // Hono caches it for the validator
  const hash = createHash('sha256').update(`${c.req.method} ${c.req.path}\n${body}`).digest('hex');

  const existing = await db.withTransaction(async (tx) => {
    await tx.query(
      'idempotency.expire',
      'DELETE FROM idempotency_record WHERE principal = $1 AND key = $2 AND expires_at < now()',
      [principal, key],
    );
    // The claim is the insert that the primary key (principal, key) lets through once (guard idempotency-claim, schema.sql).
    const claimed = await tx.query(
      'idempotency.claim',
      `INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at)
       VALUES ($1, $2, $3, $4, $5, 'in_flight', now() + interval '${TTL}') ON CONFLICT DO NOTHING`,
      [principal, key, c.req.method, c.req.path, hash],
    );
    if (claimed.rowCount === 1) return null;
    // Read locked: of two retries taking over an abandoned claim, the second sees the first's.
    // guard: idempotency-takeover-lock | remove: FOR UPDATE | test: test/concurrency/rest.test.ts :: take over an abandoned claim
    const { rows } = await tx.query<StoredRecord>(
      'idempotency.get',
      `SELECT request_hash, state, response_status, response_body, response_headers, response_raw,
              created_at < now() - interval '${ABANDONED_AFTER}' AS abandoned
       FROM idempotency_record WHERE principal = $1 AND key = $2 FOR UPDATE`,
      [principal, key],
    );
    const rec = rows[0];
    if (rec.request_hash === hash && rec.state === 'in_flight' && rec.abandoned) {
      await tx.query(
        'idempotency.take_over',
        'UPDATE idempotency_record SET created_at = now() WHERE principal = $1 AND key = $2',
        [principal, key],
      );
      return null;
    }
    return rec;
  });

  if (existing) {
    if (existing.request_hash !== hash)
      throw new DomainError('unprocessable', 'Idempotency-Key was already used with a different request');
    if (existing.state === 'in_flight')
      throw new DomainError('in_progress', 'a request with this Idempotency-Key is still in progress');
    const headers = { ...(existing.response_headers ?? {}), 'Idempotent-Replayed': 'true' };
    if (existing.response_raw !== null) return c.body(existing.response_raw, existing.response_status as 200, headers);
    if (existing.response_status === 204 || existing.response_body === null)
      return c.body(null, existing.response_status as 204, headers);
    return c.json(existing.response_body as object, existing.response_status as 200, headers);
  }

  const claim: IdempotencyClaim = { principal, key, completed: false };
  c.set('idempotency', claim);
  try {
    await next();
  } finally {
    if (!claim.completed) await release(db, claim);
  }
};

async function release(db: Queryable, claim: IdempotencyClaim) {
  await db.query(
    'idempotency.release',
    `DELETE FROM idempotency_record WHERE principal = $1 AND key = $2 AND state = 'in_flight'`,
    [claim.principal, claim.key],
  );
}

/** Stores the response's exact body and headers inside the effect's transaction (called by `commit`). */
export async function completeIdempotency(
  tx: Queryable,
  claim: IdempotencyClaim,
  status: number,
  raw: string | null,
  headers: Record<string, string>,
) {
  await tx.query(
    'idempotency.complete',
    `UPDATE idempotency_record SET state = 'done', response_status = $3, response_raw = $4, response_headers = $5 WHERE principal = $1 AND key = $2`,
    [claim.principal, claim.key, status, raw, JSON.stringify(headers)],
  );
}
