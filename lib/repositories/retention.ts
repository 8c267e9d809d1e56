// Retention (decisions.md section 6): outbox events older than EVENT_RETENTION_HOURS (replay is
// promised for 24 h) and expired idempotency records are deleted by the sweep, in bounded
// batches so one pass never holds locks or a transaction long.
// Each DELETE takes the row addresses (ctid) of its batch from an index walk
// (event_outbox_created_at_idx, idempotency_record_expires_at_idx) from the oldest row and
// deletes by address (a Tid Scan). `WHERE id IN (SELECT … LIMIT n)` reads the same but native
// PostgreSQL plans it as a hash semi-join over a sequential scan of the whole table.
import type { Queryable } from '../db/pool';
import { ATTEMPT_LOG_DAYS, DELETE_OLD_ATTEMPTS } from './webhooks';

export const RETENTION_BATCH_ROWS = 5_000;
/** Batches per table per sweep pass: a backlog is worked off over several passes. */
export const RETENTION_MAX_BATCHES = 40;

/**
 * $1 retention hours, $2 batch size. An event an enabled webhook's cursor has not passed yet is
 * kept (it is still to be queued for that endpoint: docs/webhooks.md, "Retention"); a disabled
 * endpoint holds nothing back.
 */
// guard: outbox-retention-webhook-cursor | remove: AND NOT EXISTS (SELECT 1 FROM webhook w WHERE w.user_id = e.user_id AND w.enabled AND w.cursor_seq < e.seq) | test: test/webhooks/delivery.test.ts :: cursor has not passed
export const DELETE_EXPIRED_EVENTS = `DELETE FROM event_outbox WHERE ctid = ANY(ARRAY(
  SELECT e.ctid FROM event_outbox e WHERE e.created_at < now() - make_interval(hours => $1)
    AND NOT EXISTS (SELECT 1 FROM webhook w WHERE w.user_id = e.user_id AND w.enabled AND w.cursor_seq < e.seq)
  ORDER BY e.created_at LIMIT $2))`;
/** $1 batch size. */
export const DELETE_EXPIRED_IDEMPOTENCY_RECORDS = `DELETE FROM idempotency_record WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM idempotency_record WHERE expires_at < now() ORDER BY expires_at LIMIT $1))`;

export interface Pruned {
  events: number;
  idempotencyRecords: number;
  webhookAttempts: number;
}

export async function pruneExpired(db: Queryable, retentionHours: number): Promise<Pruned> {
  const events = await inBatches(() =>
    db.query('retention.events', DELETE_EXPIRED_EVENTS, [retentionHours, RETENTION_BATCH_ROWS]),
  );
  const idempotencyRecords = await inBatches(() =>
    db.query('retention.idempotency', DELETE_EXPIRED_IDEMPOTENCY_RECORDS, [RETENTION_BATCH_ROWS]),
  );
  const webhookAttempts = await inBatches(() =>
    db.query('retention.webhook_attempts', DELETE_OLD_ATTEMPTS, [ATTEMPT_LOG_DAYS, RETENTION_BATCH_ROWS]),
  );
  return { events, idempotencyRecords, webhookAttempts };
}

async function inBatches(batch: () => Promise<{ rowCount: number | null }>): Promise<number> {
  let total = 0;
  for (let i = 0; i < RETENTION_MAX_BATCHES; i++) {
    const n = (await batch()).rowCount ?? 0;
    total += n;
    if (n < RETENTION_BATCH_ROWS) break;
  }
  return total;
}
