// Idempotency-Key as decisions.md section 3 (IETF draft semantics). The middleware checks the key
// and hashes the request; `commit` claims the key with the first statement of the effect's own
// transaction (claimIdempotency) and stores the final response in it (completion): one
// transaction, and a request that fails leaves no record behind. A duplicate sent while the first
// runs finds the key's transaction lock taken and answers 409 at once; one sent after it commits
// finds its record and replays it.
import { UUID_PATTERN } from '@mi/lib/async';
import { createHash } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { DomainError } from '@mi/lib/errors';
import type { Queryable } from '@mi/lib/db/pool';
import type { Statement } from '@mi/lib/events/outbox';
import type { AppEnv, IdempotencyClaim } from '../env';
import { RAW_BODY_TYPE } from './body-limit';

const TTL = '24 hours';
/** An in-flight marker older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER = '2 minutes';

/** A record the key already has: what its first request answered (or that it is still in flight). */
export interface StoredRecord {
  request_hash: string;
  state: 'in_flight' | 'done';
  abandoned: boolean;
  expired: boolean;
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
  // Raw bodies are not bounded by the app's body limit; no idempotent operation takes one, so
  // refuse it rather than read it whole.
  if (RAW_BODY_TYPE.test(c.req.header('content-type') ?? ''))
    throw new DomainError('unsupported_format', 'this operation takes a JSON body');
  const body = await c.req.text(); // Hono caches it for the validator
  const hash = createHash('sha256').update(`${c.req.method} ${c.req.path}\n${body}`).digest('hex');
  const principal = c.var.principal.userId ?? 'service';
  c.set('idempotency', { principal, key, method: c.req.method, path: c.req.path, hash });
  await next();
};

/**
 * The claim, first in the effect's transaction: null when this request holds the key now (its
 * effect runs), else the record of the request that did (the caller answers with `answerOf`).
 * Throws 409 while another request with the key is in flight, 422 for a different request.
 */
export async function claimIdempotency(tx: Queryable, claim: IdempotencyClaim): Promise<StoredRecord | null> {
  const args = [claim.principal, claim.key, claim.method, claim.path, claim.hash];
  // The key's transaction lock, tried: held by the request whose effect is running, so a duplicate
  // answers 409 instead of waiting on its uncommitted record (the primary key keeps one effect).
  // guard: idempotency-in-flight-lock | remove: WHERE pg_try_advisory_xact_lock(hashtextextended('idempotency:' || $1 || ':' || $2::uuid, 0)) | test: test/concurrency/rest.test.ts :: duplicate sent while the first still runs
  const { rows } = await tx.query<{ free: boolean; claimed: boolean }>(
    'idempotency.claim',
    `WITH lock AS (
       SELECT true AS free WHERE pg_try_advisory_xact_lock(hashtextextended('idempotency:' || $1 || ':' || $2::uuid, 0))
     ), claimed AS (
       INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at)
       SELECT $1, $2, $3, $4, $5, 'in_flight', now() + interval '${TTL}' FROM lock
       ON CONFLICT DO NOTHING RETURNING 1
     )
     SELECT EXISTS (SELECT FROM lock) AS free, EXISTS (SELECT FROM claimed) AS claimed`,
    args,
  );
  // The claim is the insert that the primary key (principal, key) lets through once (guard idempotency-claim, schema.sql).
  if (rows[0].claimed) return null;
  if (!rows[0].free) throw inProgress();
  // Read locked: of two retries taking over an abandoned claim, the second sees the first's.
  // guard: idempotency-takeover-lock | remove: FOR UPDATE | test: test/concurrency/rest.test.ts :: take over an abandoned claim
  const found = await tx.query<StoredRecord>(
    'idempotency.get',
    `SELECT request_hash, state, response_status, response_body, response_headers, response_raw,
            created_at < now() - interval '${ABANDONED_AFTER}' AS abandoned, expires_at < now() AS expired
     FROM idempotency_record WHERE principal = $1 AND key = $2 FOR UPDATE`,
    [claim.principal, claim.key],
  );
  const rec = found.rows[0];
  // An expired record, or a claim an earlier release left in flight when its request died: ours now.
  if (rec.expired || (rec.request_hash === claim.hash && rec.state === 'in_flight' && rec.abandoned)) {
    await tx.query(
      'idempotency.take_over',
      `UPDATE idempotency_record SET method = $3, path = $4, request_hash = $5, state = 'in_flight',
         response_status = NULL, response_body = NULL, response_headers = NULL, response_raw = NULL,
         created_at = now(), expires_at = now() + interval '${TTL}'
       WHERE principal = $1 AND key = $2`,
      args,
    );
    return null;
  }
  if (rec.request_hash !== claim.hash)
    throw new DomainError('unprocessable', 'Idempotency-Key was already used with a different request');
  if (rec.state === 'in_flight') throw inProgress();
  return rec;
}

const inProgress = () => new DomainError('in_progress', 'a request with this Idempotency-Key is still in progress');

/** The first request's answer again: its status, exact body and headers, marked replayed. */
export function answerOf(c: Context<AppEnv>, rec: StoredRecord): Response {
  const headers = { ...(rec.response_headers ?? {}), 'Idempotent-Replayed': 'true' };
  if (rec.response_raw !== null) return c.body(rec.response_raw, rec.response_status as 200, headers);
  if (rec.response_status === 204 || rec.response_body === null)
    return c.body(null, rec.response_status as 204, headers);
  return c.json(rec.response_body as object, rec.response_status as 200, headers);
}

/** The statement storing the response's exact body and headers, last in the effect's transaction (`commit`). */
export function completion(
  claim: IdempotencyClaim,
  status: number,
  raw: string | null,
  headers: Record<string, string>,
): Statement {
  return {
    name: 'idempotency.complete',
    text: `UPDATE idempotency_record SET state = 'done', response_status = $3, response_raw = $4, response_headers = $5 WHERE principal = $1 AND key = $2`,
    params: [claim.principal, claim.key, status, raw, JSON.stringify(headers)],
  };
}
