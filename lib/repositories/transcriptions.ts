// Transcriptions repository: the status state machine and its append-only history.
// Tenant scope comes from the meeting (transcription has no user_id of its own).
import type { Queryable } from '../db/pool';
import { DomainError, notFound } from '../errors';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export const TRANSCRIPTION_STATUSES = ['pending', 'transcribing', 'synthesizing', 'completed', 'failed'] as const;
export type TranscriptionStatus = (typeof TRANSCRIPTION_STATUSES)[number];

export interface Transcription {
  id: string;
  meeting_id: string;
  status: TranscriptionStatus;
  status_message: string | null;
  is_degraded: boolean;
  created_at: string;
  updated_at: string;
}

export interface StatusHistoryEntry {
  id: string;
  transcription_id: string;
  status: TranscriptionStatus;
  status_message: string | null;
  created_at: string;
}

/** decisions.md section 4: the forward path, failure from any running state, and re-runs. */
const TRANSITIONS: Record<TranscriptionStatus, readonly TranscriptionStatus[]> = {
  pending: ['transcribing', 'failed'],
  transcribing: ['synthesizing', 'failed'],
  synthesizing: ['completed', 'failed'],
  completed: ['transcribing'],
  failed: ['transcribing'],
};

export const canTransition = (from: TranscriptionStatus, to: TranscriptionStatus) => TRANSITIONS[from].includes(to);

const COLUMNS = 't.id, t.meeting_id, t.status, t.status_message, t.is_degraded, t.created_at, t.updated_at';
/** Exact keyset value of a timestamptz (µs since epoch): an ISO string keeps only ms. */

async function appendHistory(tx: Queryable, id: string, status: string, message: string | null): Promise<void> {
  await tx.query(
    'transcription.history_append',
    // clock_timestamp: several changes in one transaction must still list in order.
    `INSERT INTO transcription_status_history (transcription_id, status, status_message, created_at)
     VALUES ($1, $2, $3, clock_timestamp())`,
    [id, status, message],
  );
}

/** Creates a transcription of a meeting the caller has already checked, with its first history row. */
export async function createTranscription(
  tx: Queryable,
  meetingId: string,
  status: 'pending' | 'transcribing' = 'pending',
): Promise<Transcription> {
  const { rows } = await tx.query<Transcription>(
    'transcription.create',
    `INSERT INTO transcription AS t (meeting_id, status) VALUES ($1, $2) RETURNING ${COLUMNS}`,
    [meetingId, status],
  );
  await appendHistory(tx, rows[0].id, status, null);
  return rows[0];
}

/** The transcription (with its meeting's owner) if the actor may see it; `forUpdate` locks it. */
export async function getTranscription(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<(Transcription & { user_id: string }) | null> {
  const { rows } = await q.query<Transcription & { user_id: string }>(
    'transcription.get',
    `SELECT ${COLUMNS}, m.user_id FROM transcription t JOIN meeting m ON m.id = t.meeting_id
     WHERE t.id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL${opts.forUpdate ? ' FOR UPDATE OF t' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

/** The meeting's transcriptions, oldest first. */
export async function listTranscriptions(
  q: Queryable,
  actor: Actor,
  meetingId: string,
  p: { limit: number; cursor?: string },
): Promise<Page<Transcription>> {
  const [afterAt, afterId] = decodeCreatedCursor(p.cursor);
  const { rows } = await q.query<Transcription & { page_key: string }>(
    'transcription.list',
    `SELECT ${COLUMNS}, ${createdKey('t.')} FROM transcription t JOIN meeting m ON m.id = t.meeting_id
     WHERE t.meeting_id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL
       AND ($3::timestamptz IS NULL OR (t.created_at, t.id) > ($3::timestamptz, $4::uuid))
     ORDER BY t.created_at, t.id LIMIT $5`,
    [meetingId, actor.userId, afterAt, afterId, p.limit + 1],
  );
  return toCreatedPage(rows, p.limit);
}

export interface TranscriptionPatch {
  status?: TranscriptionStatus;
  status_message?: string | null;
  is_degraded?: boolean;
}

/**
 * Applies a patch under the state machine: 404 unknown, 409 a transition the machine forbids.
 * A status equal to the current one is no transition (no history row); a real change appends
 * one history row with the (new) status_message.
 */
export async function updateTranscription(
  tx: Queryable,
  id: string,
  patch: TranscriptionPatch,
): Promise<Transcription & { user_id: string }> {
  // guard: transcription-claim-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: second batch claim of a transcription
  const current = await getTranscription(tx, { userId: null }, id, { forUpdate: true });
  if (!current) throw notFound('transcription');
  // The batch pass's exclusive claim: a second move to synthesizing (a redelivered
  // recording.finalized) is refused, so one pass runs per claim (decisions.md section 7).
  if (patch.status === 'synthesizing' && current.status === 'synthesizing') {
    throw new DomainError('invalid_state', 'transcription is already synthesizing (claimed by another batch pass)');
  }
  const changes = patch.status !== undefined && patch.status !== current.status;
  if (changes && !canTransition(current.status, patch.status!)) {
    throw new DomainError('invalid_state', `transcription cannot go from ${current.status} to ${patch.status}`);
  }
  const { rows } = await tx.query<Transcription>(
    'transcription.update',
    `UPDATE transcription t SET status = COALESCE($2, t.status),
       status_message = CASE WHEN $3::boolean THEN $4 ELSE t.status_message END,
       is_degraded = COALESCE($5, t.is_degraded), updated_at = now()
     WHERE t.id = $1 RETURNING ${COLUMNS}`,
    [
      id,
      patch.status ?? null,
      patch.status_message !== undefined,
      patch.status_message ?? null,
      patch.is_degraded ?? null,
    ],
  );
  if (changes) await appendHistory(tx, id, rows[0].status, rows[0].status_message);
  return { ...rows[0], user_id: current.user_id };
}

/** Status history, oldest first. */
export async function listStatusHistory(
  q: Queryable,
  actor: Actor,
  transcriptionId: string,
  p: { limit: number; cursor?: string },
): Promise<Page<StatusHistoryEntry>> {
  const [afterAt, afterId] = decodeCreatedCursor(p.cursor);
  const { rows } = await q.query<StatusHistoryEntry & { page_key: string }>(
    'transcription.history_list',
    `SELECT h.id, h.transcription_id, h.status, h.status_message, h.created_at, ${createdKey('h.')}
     FROM transcription_status_history h JOIN transcription t ON t.id = h.transcription_id JOIN meeting m ON m.id = t.meeting_id
     WHERE h.transcription_id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL
       AND ($3::timestamptz IS NULL OR (h.created_at, h.id) > ($3::timestamptz, $4::uuid))
     ORDER BY h.created_at, h.id LIMIT $5`,
    [transcriptionId, actor.userId, afterAt, afterId, p.limit + 1],
  );
  return toCreatedPage(rows, p.limit);
}
