// Webhooks repository: a user's endpoints, their pending deliveries and the attempt log
// (decisions.md section 7). The delivery work itself (fan-out, claims, attempts) is in
// lib/webhooks/dispatcher.ts.
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

/** The event types an endpoint can subscribe to: the WebSocket's, less the progress event. */
export const WEBHOOK_EVENT_TYPES = ['EntityChanged', 'TranscriptSegmentEvent', 'TalkingPointEvent'] as const;

export interface Webhook {
  id: string;
  url: string;
  event_types: string[];
  description: string | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttempt {
  event_id: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  attempted_at: string;
}

const COLUMNS = 'id, url, event_types, description, enabled, created_at, updated_at';
const owned = '($2::uuid IS NULL OR user_id = $2)';

/** Creates an endpoint whose deliveries start after the user's latest event. */
export async function createWebhook(
  q: Queryable,
  userId: string,
  w: { url: string; event_types: string[]; description: string | null; secret: string },
): Promise<Webhook> {
  const { rows } = await q.query<Webhook>(
    'webhook.create',
    `INSERT INTO webhook (user_id, url, event_types, description, secret, cursor_seq)
     VALUES ($1, $2, $3, $4, $5, COALESCE((SELECT last_seq FROM event_sequence WHERE user_id = $1), 0))
     RETURNING ${COLUMNS}`,
    [userId, w.url, w.event_types, w.description, w.secret],
  );
  return rows[0];
}

/**
 * The user's endpoints, counted under their user row's lock (held to commit): concurrent creates
 * count one after another, so the per-user limit holds. NO KEY UPDATE leaves the row's key free
 * for the inserts of the user's other writers.
 */
export async function countWebhooksLocked(q: Queryable, userId: string): Promise<number> {
  // guard: webhook-limit-user-lock | remove: FOR NO KEY UPDATE | test: test/concurrency/webhooks.test.ts :: 21st
  await q.query('webhook.lock_user', 'SELECT 1 FROM app_user WHERE id = $1 FOR NO KEY UPDATE', [userId]);
  const { rows } = await q.query<{ n: number }>(
    'webhook.count',
    'SELECT count(*)::int AS n FROM webhook WHERE user_id = $1',
    [userId],
  );
  return rows[0].n;
}

export async function getWebhook(q: Queryable, actor: Actor, id: string): Promise<Webhook | null> {
  const { rows } = await q.query<Webhook>('webhook.get', `SELECT ${COLUMNS} FROM webhook WHERE id = $1 AND ${owned}`, [
    id,
    actor.userId,
  ]);
  return rows[0] ?? null;
}

/** The user's endpoints, oldest first. */
export async function listWebhooks(
  q: Queryable,
  userId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<Webhook>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<Webhook & { page_key: string }>(
    'webhook.list',
    `SELECT ${COLUMNS}, ${createdKey()} FROM webhook
     WHERE user_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
     ORDER BY created_at, id LIMIT $4`,
    [userId, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

export interface WebhookChanges {
  url?: string;
  event_types?: string[];
  description?: string | null;
  enabled?: boolean;
}

/** Applies the given fields; enabling again clears the failing time (a fresh 5 days). */
export async function updateWebhook(
  q: Queryable,
  actor: Actor,
  id: string,
  c: WebhookChanges,
): Promise<Webhook | null> {
  const { rows } = await q.query<Webhook>(
    'webhook.update',
    `UPDATE webhook SET
       url = COALESCE($3, url),
       event_types = COALESCE($4, event_types),
       description = CASE WHEN $5 THEN $6 ELSE description END,
       failing_since = CASE WHEN $7 AND NOT enabled THEN NULL ELSE failing_since END,
       enabled = COALESCE($7, enabled),
       updated_at = now()
     WHERE id = $1 AND ${owned} RETURNING ${COLUMNS}`,
    [
      id,
      actor.userId,
      c.url ?? null,
      c.event_types ?? null,
      'description' in c,
      c.description ?? null,
      c.enabled ?? null,
    ],
  );
  return rows[0] ?? null;
}

export async function deleteWebhook(q: Queryable, actor: Actor, id: string): Promise<boolean> {
  const { rowCount } = await q.query('webhook.delete', `DELETE FROM webhook WHERE id = $1 AND ${owned}`, [
    id,
    actor.userId,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * Replaces the signing secret. The replaced one keeps signing beside it for `overlapSeconds`
 * (0: not at all); a rotation during an overlap drops the secret before the replaced one.
 * False when the caller has no such webhook.
 */
export async function rotateSecret(
  q: Queryable,
  actor: Actor,
  id: string,
  secret: string,
  overlapSeconds: number,
): Promise<boolean> {
  const { rowCount } = await q.query(
    'webhook.rotate_secret',
    `UPDATE webhook SET previous_secret = CASE WHEN $4::int > 0 THEN secret END,
       previous_secret_expires_at = CASE WHEN $4::int > 0 THEN now() + make_interval(secs => $4) END,
       secret = $3, updated_at = now()
     WHERE id = $1 AND ${owned}`,
    [id, actor.userId, secret, overlapSeconds],
  );
  return (rowCount ?? 0) > 0;
}

/** Queues one delivery (the test event), due now and ahead of the endpoint's events (seq 0). */
export async function queueDelivery(q: Queryable, webhookId: string, eventId: string, body: string): Promise<void> {
  await q.query(
    'webhook.queue',
    'INSERT INTO webhook_delivery (webhook_id, event_id, seq, body) VALUES ($1, $2, 0, $3)',
    [webhookId, eventId, body],
  );
}

/** The attempt log of an endpoint, newest first. */
export async function listAttempts(
  q: Queryable,
  webhookId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<WebhookAttempt>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<WebhookAttempt & { id: string; page_key: string }>(
    'webhook.attempts',
    `SELECT id, event_id, attempt, status_code, error, duration_ms, attempted_at,
            to_char(attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS page_key
     FROM webhook_attempt
     WHERE webhook_id = $1 AND ($2::timestamptz IS NULL OR (attempted_at, id) < ($2::timestamptz, $3::uuid))
     ORDER BY attempted_at DESC, id DESC LIMIT $4`,
    [webhookId, afterAt, afterId, f.limit + 1],
  );
  const page = toCreatedPage(rows, f.limit);
  return { items: page.items.map(({ id: _, ...a }) => a), next_cursor: page.next_cursor };
}

/** $1 days: the attempt log is kept 7 days. */
export const DELETE_OLD_ATTEMPTS = `DELETE FROM webhook_attempt WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM webhook_attempt WHERE attempted_at < now() - make_interval(days => $1) ORDER BY attempted_at LIMIT $2))`;
export const ATTEMPT_LOG_DAYS = 7;
