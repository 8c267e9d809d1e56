// Retention (decisions.md section 6): outbox events older than EVENT_RETENTION_HOURS (replay is
// promised for 24 h) and expired idempotency records are removed by the sweep. The outbox goes by
// the day: a day's partition past the window is dropped whole (decision 0010); what is left (the
// default partition's rows, a day a webhook holds) is deleted, as the other tables are, in
// bounded batches so one pass never holds locks or a transaction long. The segment manifest has no
// retention of its own (a meeting's purge deletes its rows): its past months are dropped once empty.
// Each DELETE takes the row addresses (ctid) of its batch from an index walk (the created_at
// index, idempotency_record_expires_at_idx) from the oldest row and deletes by address (a Tid
// Scan). `WHERE id IN (SELECT … LIMIT n)` reads the same but native PostgreSQL plans it as a
// hash semi-join over a sequential scan of the whole table.
import type { Database } from '../db/pool';
import { dropEmptyManifestPartitions, dropExpiredPartitions } from './partitions';
import { ATTEMPT_LOG_DAYS, DELETE_OLD_ATTEMPTS } from './webhooks';

export const RETENTION_BATCH_ROWS = 5_000;
/** Batches per table per sweep pass: a backlog is worked off over several passes. */
export const RETENTION_MAX_BATCHES = 40;

/**
 * Whether an outbox row must stay past retention: an enabled webhook's cursor has not passed it yet
 * (it is still to be queued for that endpoint: docs/webhooks.md, "Retention"); a disabled
 * endpoint holds nothing back. Over a partition: one index probe per enabled webhook.
 */
const HELD = 'w.enabled AND w.cursor_seq < e.seq';
export const heldInPartition = (partition: string) =>
  `SELECT 1 FROM webhook w WHERE w.enabled AND EXISTS (SELECT 1 FROM "${partition}" e WHERE e.user_id = w.user_id AND e.seq > w.cursor_seq)`;

/**
 * $1 retention hours, $2 batch size, over one partition of event_outbox (its default partition, or
 * a day's partition a webhook holds): a row address (ctid) names a row of one table only.
 */
// guard: outbox-retention-webhook-cursor | remove: AND NOT EXISTS (SELECT 1 FROM webhook w WHERE w.user_id = e.user_id AND ${HELD}) | test: test/webhooks/delivery.test.ts :: cursor has not passed
export const deleteExpiredEvents = (partition: string) => `DELETE FROM "${partition}" WHERE ctid = ANY(ARRAY(
  SELECT e.ctid FROM "${partition}" e WHERE e.created_at < now() - make_interval(hours => $1)
    AND NOT EXISTS (SELECT 1 FROM webhook w WHERE w.user_id = e.user_id AND ${HELD})
  ORDER BY e.created_at LIMIT $2))`;
/** $1 batch size. */
export const DELETE_EXPIRED_IDEMPOTENCY_RECORDS = `DELETE FROM idempotency_record WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM idempotency_record WHERE expires_at < now() ORDER BY expires_at LIMIT $1))`;

export interface Pruned {
  events: number;
  /** Days of events dropped whole (lib/repositories/partitions.ts). */
  eventPartitions: number;
  /** Past months of segment_manifest dropped, empty. */
  manifestPartitions: number;
  idempotencyRecords: number;
  webhookAttempts: number;
}

export async function pruneExpired(db: Database, retentionHours: number): Promise<Pruned> {
  const days = await dropExpiredPartitions(db, 'event_outbox', retentionHours, heldInPartition);
  let events = 0;
  for (const partition of [...days.held, 'event_outbox_default'])
    events += await inBatches(() =>
      db.query('retention.events', deleteExpiredEvents(partition), [retentionHours, RETENTION_BATCH_ROWS]),
    );
  const idempotencyRecords = await inBatches(() =>
    db.query('retention.idempotency', DELETE_EXPIRED_IDEMPOTENCY_RECORDS, [RETENTION_BATCH_ROWS]),
  );
  const webhookAttempts = await inBatches(() =>
    db.query('retention.webhook_attempts', DELETE_OLD_ATTEMPTS, [ATTEMPT_LOG_DAYS, RETENTION_BATCH_ROWS]),
  );
  const months = await dropEmptyManifestPartitions(db);
  return {
    events,
    eventPartitions: days.dropped.length,
    manifestPartitions: months.dropped.length,
    idempotencyRecords,
    webhookAttempts,
  };
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
