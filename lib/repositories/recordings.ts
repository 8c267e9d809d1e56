// Live recording takes (table `recording`, one row per meeting and audio_version).
// States: recording (capture open) → stopping (settle + ML drain) → stopped (gap uploads until
// the deadline) → finalizing → finalized. "In processing" (decisions.md 4) = recording|stopping.
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import { recordEvent } from './recording-history';

export type RecordingState = 'recording' | 'stopping' | 'stopped' | 'finalizing' | 'finalized';
export type StopReason = 'user' | 'max_duration' | 'connection_closed';
export type Encoding = 'pcm_s16le' | 'webm_opus';

export interface Recording {
  meeting_id: string;
  audio_version: number;
  transcription_id: string | null;
  state: RecordingState;
  encoding: Encoding;
  sample_rate: number;
  max_duration_seconds: number;
  trace_context: Record<string, string> | null;
  started_at: string;
  stopped_at: string | null;
  stop_reason: StopReason | null;
  gap_upload_deadline: string | null;
  finalized_at: string | null;
  owner_instance: string | null;
  created_at: string;
  updated_at: string;
}

export const CAPTURE_OPEN: RecordingState[] = ['recording', 'stopping'];

export interface StartInput {
  meetingId: string;
  transcriptionId: string;
  encoding: Encoding;
  sampleRate: number;
  maxDurationSeconds: number;
  ownerInstance: string;
  /** traceparent/tracestate of the client's command, if it sent one. */
  trace?: Record<string, string> | null;
}

/**
 * Starts a new take: the next audio_version of the meeting. Call with the meeting row locked
 * (FOR UPDATE) so two starts cannot pick the same version. A take whose capture is still open
 * must be stopped or resumed first (409).
 */
export async function startRecording(tx: Queryable, input: StartInput): Promise<Recording> {
  const { rows: open } = await tx.query<{ audio_version: number }>(
    'recording.open_take',
    `SELECT audio_version FROM recording WHERE meeting_id = $1 AND state = ANY($2) LIMIT 1`,
    [input.meetingId, CAPTURE_OPEN],
  );
  if (open.length) {
    throw new DomainError(
      'recording_open',
      `audio_version ${open[0].audio_version} of this meeting is still recording; resume or stop it first`,
    );
  }
  const { rows } = await tx.query<Recording>(
    'recording.start',
    `INSERT INTO recording (meeting_id, audio_version, transcription_id, state, encoding, sample_rate, max_duration_seconds, owner_instance, trace_context)
     SELECT $1, COALESCE(MAX(audio_version), 0) + 1, $2, 'recording', $3, $4, $5, $6, $7 FROM recording WHERE meeting_id = $1
     RETURNING *`,
    [
      input.meetingId,
      input.transcriptionId,
      input.encoding,
      input.sampleRate,
      input.maxDurationSeconds,
      input.ownerInstance,
      input.trace && Object.keys(input.trace).length ? JSON.stringify(input.trace) : null,
    ],
  );
  const rec = rows[0];
  await recordEvent(tx, input.meetingId, 'recording_started', {
    audio_version: rec.audio_version,
    transcription_id: rec.transcription_id,
    encoding: rec.encoding,
    max_duration_seconds: rec.max_duration_seconds,
    instance: input.ownerInstance,
  });
  return rec;
}

/** A take, or the latest take of the meeting when audioVersion is omitted. */
export async function getRecording(
  q: Queryable,
  meetingId: string,
  audioVersion?: number,
  opts: { forUpdate?: boolean } = {},
): Promise<Recording | null> {
  if (audioVersion !== undefined && audioVersion > 2_147_483_647) return null; // beyond the int column: no such take
  const { rows } = await q.query<Recording>(
    'recording.get',
    `SELECT * FROM recording WHERE meeting_id = $1 AND ($2::int IS NULL OR audio_version = $2)
     ORDER BY audio_version DESC LIMIT 1${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [meetingId, audioVersion ?? null],
  );
  return rows[0] ?? null;
}

/**
 * recording → stopping; false when the take was not recording (someone else stopped it) or,
 * with `owner`, when another instance owns it now (it was resumed elsewhere). With `owner`, a
 * take already stopping under that owner is true too: a retried stop whose first commit landed.
 */
export async function markStopping(
  q: Queryable,
  meetingId: string,
  audioVersion: number,
  reason: StopReason,
  opts: { owner?: string } = {},
): Promise<boolean> {
  const { rowCount } = await q.query(
    'recording.stopping',
    `UPDATE recording SET state = 'stopping', stop_reason = $3, updated_at = now()
     WHERE meeting_id = $1 AND audio_version = $2
       AND (state = 'recording' AND ($4::text IS NULL OR owner_instance = $4) OR state = 'stopping' AND owner_instance = $4)`,
    [meetingId, audioVersion, reason, opts.owner ?? null],
  );
  return rowCount === 1;
}

/** stopping → stopped, opening the gap-upload window. */
export async function markStopped(
  q: Queryable,
  meetingId: string,
  audioVersion: number,
  gapDeadlineSeconds: number,
): Promise<Recording | null> {
  const { rows } = await q.query<Recording>(
    'recording.stopped',
    `UPDATE recording SET state = 'stopped', stopped_at = now(),
       gap_upload_deadline = now() + make_interval(secs => $3), updated_at = now(), owner_instance = NULL
     WHERE meeting_id = $1 AND audio_version = $2 AND state = 'stopping' RETURNING *`,
    [meetingId, audioVersion, gapDeadlineSeconds],
  );
  return rows[0] ?? null;
}

// Ownership of a live take. The owning live instance holds a Firestore lease on
// recordingLeaseKey() (heartbeat) and touches `updated_at` of every open take it owns each
// OWNER_HEARTBEAT_SECONDS; at a graceful shutdown it clears owner_instance. A take still
// 'recording' whose updated_at is older than OWNER_STALE_SECONDS lost its owner (killed
// instance): the sweep stops it once RECORDING_DISCONNECT_GRACE_SECONDS more have passed.

/** Open takes untouched for idleSeconds, least recently touched first: the sweep's orphan candidates. */
export async function idleTakes(q: Queryable, idleSeconds: number, limit: number): Promise<Recording[]> {
  const { rows } = await q.query<Recording>(
    'sweep.orphaned_takes',
    'SELECT * FROM recording WHERE state = ANY($1) AND updated_at < now() - make_interval(secs => $2) ORDER BY updated_at LIMIT $3',
    [CAPTURE_OPEN, idleSeconds, limit],
  );
  return rows;
}

/**
 * An open take (with its owner's user_id) locked FOR UPDATE, if it is still untouched for
 * idleSeconds: a resume that claimed it meanwhile touched updated_at.
 */
export async function lockIdleTake(
  tx: Queryable,
  meetingId: string,
  audioVersion: number,
  idleSeconds: number,
): Promise<(Recording & { user_id: string }) | null> {
  // Locked, the idle condition is re-checked on the row a resume committed meanwhile.
  // guard: sweep-idle-take-lock | remove: FOR UPDATE OF r | test: test/concurrency/recording.test.ts :: claimed while the sweep looked
  const { rows } = await tx.query<Recording & { user_id: string }>(
    'sweep.lock_orphaned_take',
    `SELECT r.*, m.user_id FROM recording r JOIN meeting m ON m.id = r.meeting_id
     WHERE r.meeting_id = $1 AND r.audio_version = $2 AND r.state = ANY($3) AND r.updated_at < now() - make_interval(secs => $4)
     FOR UPDATE OF r`,
    [meetingId, audioVersion, CAPTURE_OPEN, idleSeconds],
  );
  return rows[0] ?? null;
}

/** How often the owner renews its lease and touches the row. */
export const OWNER_HEARTBEAT_SECONDS = 10;
/** The owner's lease lifetime; a row untouched this long has no live owner. */
export const OWNER_STALE_SECONDS = 30;

/** Makes `owner` the owner of a take whose capture is open; null when it is not recording. */
export async function claimRecording(
  tx: Queryable,
  meetingId: string,
  audioVersion: number,
  owner: string,
): Promise<(Recording & { previous_owner: string | null }) | null> {
  // prev is read locked, so it is the owner a concurrent claim committed, not the one before it.
  // guard: claim-previous-owner-lock | remove: FOR UPDATE) | test: test/concurrency/recording.test.ts :: another resume claimed it first
  const { rows } = await tx.query<Recording & { previous_owner: string | null }>(
    'recording.claim',
    `WITH prev AS (SELECT owner_instance FROM recording WHERE meeting_id = $1 AND audio_version = $2 FOR UPDATE)
     UPDATE recording r SET owner_instance = $3, updated_at = now() FROM prev
     WHERE r.meeting_id = $1 AND r.audio_version = $2 AND r.state = 'recording'
     RETURNING r.*, prev.owner_instance AS previous_owner`,
    [meetingId, audioVersion, owner],
  );
  return rows[0] ?? null;
}

/** The owner's heartbeat on every open take it owns, in one statement; returns those takes. */
export async function touchOwnedTakes(
  q: Queryable,
  owner: string,
): Promise<Pick<Recording, 'meeting_id' | 'audio_version'>[]> {
  const { rows } = await q.query<Pick<Recording, 'meeting_id' | 'audio_version'>>(
    'recording.touch_owned',
    `UPDATE recording SET updated_at = now() WHERE owner_instance = $1 AND state = ANY($2) RETURNING meeting_id, audio_version`,
    [owner, CAPTURE_OPEN],
  );
  return rows;
}

export interface TakeKey {
  meetingId: string;
  audioVersion: number;
}

/** Locks takes for segment writes, in key order so that concurrent writers cannot deadlock. Missing takes are absent. */
export async function lockTakesForWrite(
  tx: Queryable,
  takes: TakeKey[],
): Promise<Pick<Recording, 'meeting_id' | 'audio_version' | 'state' | 'owner_instance' | 'created_at'>[]> {
  if (!takes.length) return [];
  // guard: take-write-lock | remove: FOR UPDATE | test: test/concurrency/recording.test.ts :: another writer of the take committed meanwhile
  const { rows } = await tx.query<
    Pick<Recording, 'meeting_id' | 'audio_version' | 'state' | 'owner_instance' | 'created_at'>
  >(
    'recording.lock_for_write',
    `SELECT meeting_id, audio_version, state, owner_instance, created_at FROM recording
     WHERE (meeting_id, audio_version) IN (SELECT * FROM unnest($1::uuid[], $2::int[]))
     ORDER BY meeting_id, audio_version FOR UPDATE`,
    [takes.map((t) => t.meetingId), takes.map((t) => t.audioVersion)],
  );
  return rows;
}

/** Clears owner_instance if it is still `owner` (graceful shutdown: the take waits for a resume). */
export async function releaseOwner(
  q: Queryable,
  meetingId: string,
  audioVersion: number,
  owner: string,
): Promise<void> {
  await q.query(
    'recording.release_owner',
    'UPDATE recording SET owner_instance = NULL, updated_at = now() WHERE meeting_id = $1 AND audio_version = $2 AND owner_instance = $3',
    [meetingId, audioVersion, owner],
  );
}

/** The Firestore lease key of a take's owning live instance (shared by the live service and the sweep). */
export const recordingLeaseKey = (meetingId: string, audioVersion: number) => `recording:${meetingId}:${audioVersion}`;

/** A pcm_s16le frame's size: 100 ms of 16-bit mono samples (decisions.md section 6). */
export const pcmFrameBytes = (sampleRate: number) => Math.round(sampleRate / 10) * 2;
