// Retention (decisions.md section 6): outbox events older than EVENT_RETENTION_HOURS (replay is
// promised for 24 h) and expired idempotency records are deleted by the sweep, in bounded
// batches so one pass never holds locks or a transaction long, each batch walking an index
// (event_outbox_created_at_idx, idempotency_record_expires_at_idx) from its oldest row.
import type { Queryable } from '../db/pool';

export const RETENTION_BATCH_ROWS = 5_000;
/** Batches per table per sweep pass: a backlog is worked off over several passes. */
export const RETENTION_MAX_BATCHES = 40;

export interface Pruned {
  events: number;
  idempotencyRecords: number;
}

export async function pruneExpired(db: Queryable, retentionHours: number): Promise<Pruned> {
  const events = await inBatches(() =>
    db.query(
      'retention.events',
      `DELETE FROM event_outbox WHERE id IN (
         SELECT id FROM event_outbox WHERE created_at < now() - make_interval(hours => $1) ORDER BY created_at LIMIT $2)`,
      [retentionHours, RETENTION_BATCH_ROWS],
    ),
  );
  const idempotencyRecords = await inBatches(() =>
    db.query(
      'retention.idempotency',
      `DELETE FROM idempotency_record WHERE (principal, key) IN (
         SELECT principal, key FROM idempotency_record WHERE expires_at < now() ORDER BY expires_at LIMIT $1)`,
      [RETENTION_BATCH_ROWS],
    ),
  );
  return { events, idempotencyRecords };
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
