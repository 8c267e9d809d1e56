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

/** The batch pass's claim as its holder sees it: set while the transcription is synthesizing. */
export interface BatchClaim {
  claim_id: string | null;
  claim_expires_at: string | null;
}

/** A transcription with its claim as read under its lock; `claim_live`: its lease has not run out. */
type Claimed = Transcription & {
  user_id: string;
  claim_id: string | null;
  claim_expires_at: string | null;
  claim_live: boolean;
};

/** The transcription locked for a change of its status or claim (any user's: the ML's writes). */
async function lockTranscription(tx: Queryable, id: string): Promise<Claimed | null> {
  const { rows } = await tx.query<Claimed>(
    'transcription.lock',
    // guard: transcription-claim-lock | remove:  FOR UPDATE OF t | test: test/concurrency/row-locks.test.ts :: second batch claim of a transcription
    `SELECT ${COLUMNS}, m.user_id, t.claim_id, t.claim_expires_at, t.claim_expires_at > clock_timestamp() AS claim_live
     FROM transcription t JOIN meeting m ON m.id = t.meeting_id WHERE t.id = $1 AND m.deleted_at IS NULL FOR UPDATE OF t`,
    [id],
  );
  return rows[0] ?? null;
}

const at = (ts: string | null) => (ts ? new Date(ts).toISOString() : 'unknown');

/** Why `claim` (an ML-Claim header) is not the transcription's current claim, or null when it is. */
function lostClaim(t: Pick<Claimed, 'status' | 'claim_id' | 'claim_expires_at' | 'claim_live'>, claim: string) {
  if (t.claim_id !== claim)
    return `ML-Claim ${claim} is not the current claim of this transcription: it expired and the take was offered again, or it never was`;
  if (t.status !== 'synthesizing')
    return `ML-Claim ${claim} ended: the transcription is ${t.status} (an expired claim is released and the take offered again)`;
  if (!t.claim_live) return `ML-Claim ${claim} expired at ${at(t.claim_expires_at)}: the sweep offers the take again`;
  return null;
}

/**
 * Applies a patch under the state machine: 404 unknown, 409 a transition the machine forbids.
 * A status equal to the current one is no transition (no history row); a real change appends
 * one history row with the (new) status_message. The batch pass's claim (decisions.md section
 * 8): a move to synthesizing is a lease of `leaseSeconds` with a new claim id; the same move
 * carrying that id (`claim`, the ML-Claim header) renews it; any other patch carrying `claim` is
 * refused unless that claim is the current, live one (or it repeats the status that claim set).
 */
export async function updateTranscription(
  tx: Queryable,
  id: string,
  patch: TranscriptionPatch,
  opts: { claim?: string; leaseSeconds: number },
): Promise<Transcription & BatchClaim & { user_id: string }> {
  const current = await lockTranscription(tx, id);
  if (!current) throw notFound('transcription');
  const { claim } = opts;
  const changes = patch.status !== undefined && patch.status !== current.status;
  let lease: 'new' | 'renew' | null = null;
  if (patch.status === 'synthesizing') {
    if (claim !== undefined) {
      const lost = lostClaim(current, claim);
      if (lost) throw new DomainError('invalid_state', lost);
      lease = 'renew';
    } else if (current.status === 'synthesizing') {
      // The batch pass's exclusive claim: a second move to synthesizing (a redelivered
      // recording.finalized) is refused while the lease lives; once it ran out, the sweep
      // releases the take and offers it again (a new message), so that one pass runs per claim.
      throw new DomainError(
        'invalid_state',
        current.claim_live
          ? `transcription is already synthesizing (claimed by another batch pass until ${at(current.claim_expires_at)})`
          : `transcription is synthesizing under a claim that expired at ${at(current.claim_expires_at)}: the sweep offers the take again`,
      );
    } else lease = 'new';
  } else if (claim !== undefined) {
    // A retried completion (its answer was lost) finds the status its claim set: answered as before.
    const repeat = patch.status === current.status && current.claim_id === claim && !changes;
    const lost = lostClaim(current, claim);
    if (lost && !(repeat && (current.status === 'completed' || current.status === 'failed')))
      throw new DomainError('invalid_state', lost);
  }
  if (changes && !canTransition(current.status, patch.status!)) {
    throw new DomainError('invalid_state', `transcription cannot go from ${current.status} to ${patch.status}`);
  }
  const { rows } = await tx.query<Transcription & BatchClaim>(
    'transcription.update',
    `UPDATE transcription t SET status = COALESCE($2, t.status),
       status_message = CASE WHEN $3::boolean THEN $4 ELSE t.status_message END,
       is_degraded = COALESCE($5, t.is_degraded), updated_at = now(),
       claim_id = CASE WHEN $6 = 'new' THEN gen_random_uuid() ELSE t.claim_id END,
       claim_expires_at = CASE WHEN $6 IN ('new', 'renew') THEN clock_timestamp() + make_interval(secs => $7)
                               WHEN COALESCE($2, t.status) <> 'synthesizing' THEN NULL ELSE t.claim_expires_at END,
       -- A re-run (completed or failed → transcribing) counts its expired claims afresh.
       claim_expirations = CASE WHEN $8::boolean THEN 0 ELSE t.claim_expirations END
     WHERE t.id = $1 RETURNING ${COLUMNS}, t.claim_id, t.claim_expires_at`,
    [
      id,
      patch.status ?? null,
      patch.status_message !== undefined,
      patch.status_message ?? null,
      patch.is_degraded ?? null,
      lease,
      opts.leaseSeconds,
      changes && patch.status === 'transcribing',
    ],
  );
  if (changes) await appendHistory(tx, id, rows[0].status, rows[0].status_message);
  const { claim_id, claim_expires_at, ...t } = rows[0];
  const held = t.status === 'synthesizing';
  return {
    ...t,
    claim_id: held ? claim_id : null,
    claim_expires_at: held ? claim_expires_at : null,
    user_id: current.user_id,
  };
}

/**
 * A batch write carrying `claim` (ML-Claim) goes ahead only while that claim is the current, live
 * claim of the transcription (or of one of the meeting's transcriptions). The row stays locked
 * until the write commits, so that the sweep cannot release the claim (and another pass take
 * the take) between this check and the write.
 */
export async function assertCurrentClaim(
  tx: Queryable,
  claim: string,
  scope: { transcriptionId: string } | { meetingId: string },
): Promise<void> {
  const byTranscription = 'transcriptionId' in scope;
  const { rows } = await tx.query<Claimed>(
    'transcription.claim_check',
    // guard: batch-write-claim-lock | remove:  FOR UPDATE | test: test/concurrency/batch-claims.test.ts :: claim is replaced while it checks
    `SELECT t.status, t.claim_id, t.claim_expires_at, t.claim_expires_at > clock_timestamp() AS claim_live
     FROM transcription t WHERE ${byTranscription ? 't.id = $1' : 't.meeting_id = $1 AND t.claim_id = $2'} FOR UPDATE`,
    byTranscription ? [scope.transcriptionId] : [scope.meetingId, claim],
  );
  // An unknown transcription is the write's own 404.
  if (!rows[0] && byTranscription) return;
  const lost = rows[0]
    ? lostClaim(rows[0], claim)
    : `ML-Claim ${claim} is not the current claim of any transcription of this meeting: it expired and the take was offered again, or it never was`;
  if (lost) throw new DomainError('invalid_state', lost);
}

/** A synthesizing transcription whose claim ran out (or, claimed before leases, untouched for a lease). */
export interface ExpiredClaim {
  id: string;
  meeting_id: string;
  user_id: string;
  claim_expirations: number;
  /** The meeting was deleted: its take is released but not offered again. */
  meeting_deleted: boolean;
}

/** Up to `limit` transcriptions whose batch claim expired, oldest first (read without locks). */
export async function expiredClaims(q: Queryable, leaseSeconds: number, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    'transcription.claims_expired',
    `SELECT id FROM transcription
     WHERE status = 'synthesizing' AND COALESCE(claim_expires_at, updated_at + make_interval(secs => $1)) <= clock_timestamp()
     ORDER BY claim_expires_at NULLS FIRST LIMIT $2`,
    [leaseSeconds, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Locks a transcription whose claim expired and ends that claim: back to transcribing (to be
 * offered again) or, when `abandon`, to failed; one history row either way. Null when, under
 * the lock, the claim is no longer expired (renewed, completed, released by another sweep).
 */
export async function releaseExpiredClaim(
  tx: Queryable,
  id: string,
  opts: { leaseSeconds: number; maxAttempts: number },
): Promise<(ExpiredClaim & { status: 'transcribing' | 'failed' }) | null> {
  const { rows: locked } = await tx.query<ExpiredClaim & { status: string; expired: boolean }>(
    'transcription.claim_lock',
    // guard: claim-release-lock | remove:  FOR UPDATE OF t | test: test/concurrency/batch-claims.test.ts :: renewed while the sweep
    `SELECT t.id, t.meeting_id, m.user_id, t.status, t.claim_expirations, m.deleted_at IS NOT NULL AS meeting_deleted,
       COALESCE(t.claim_expires_at, t.updated_at + make_interval(secs => $2)) <= clock_timestamp() AS expired
     FROM transcription t JOIN meeting m ON m.id = t.meeting_id WHERE t.id = $1 FOR UPDATE OF t`,
    [id, opts.leaseSeconds],
  );
  const t = locked[0];
  if (!t || t.status !== 'synthesizing' || !t.expired) return null;
  const expirations = t.claim_expirations + 1;
  const status = expirations >= opts.maxAttempts ? 'failed' : 'transcribing';
  const message = status === 'failed' ? 'batch pass abandoned' : 'batch claim expired';
  await tx.query(
    'transcription.claim_release',
    `UPDATE transcription SET status = $2, status_message = $3, claim_expires_at = NULL,
       claim_expirations = $4, updated_at = now() WHERE id = $1`,
    [id, status, message, expirations],
  );
  await appendHistory(tx, id, status, message);
  return { ...t, claim_expirations: expirations, status };
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
