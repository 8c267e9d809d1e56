// Recording takes: start (live), resume (live), complete a stop (the live recorder, the sweep),
// stop an orphaned take (sweep), upload a gap (REST), finalize (sweep). The group commit of a
// live take's segments stays with its recorder (run-services/live/group-commit.ts): a step of the
// frame path, not an operation an edge asks for.
import type { Bus } from '../adapters/bus';
import type { Config } from '../config';
import {
  claimForFinalize,
  markDegraded,
  markFinalized,
  reclaimStale,
  releaseClaim,
  setTakeAudio,
  takeComposition,
  takeExists,
} from '../repositories/finalize';
import type { RecordingFinalized } from '../ml/contract';
import {
  assertGapWindowOpen,
  assertTakesNewRanges,
  FRAME_MS,
  gapObjectReferenced,
  type GapResult,
  type GapUpload,
} from '../repositories/gap-recovery';
import { composeAudio, deleteUnreferenced, sameBytes } from '../objects/take-audio';
import { gapObjectName, sha256Hex } from '../objects/take-objects';
import { assertGapsBounded, type Coverage } from '../domain/coverage';
import { coverage, insertManifestRow, overlappingRows, type ManifestRow } from '../repositories/manifest';
import { getMeeting } from '../repositories/meetings';
import { recordEvent } from '../repositories/recording-history';
import {
  claimRecording,
  getRecording,
  lockIdleTake,
  markStopped,
  markStopping,
  startRecording,
  type Recording,
  type StartInput,
  type StopReason,
} from '../repositories/recordings';
import { createTranscription } from '../repositories/transcriptions';
import { DomainError, notFound } from '../errors';
import { changed, recordingChanged, type Entity, type EventBody } from '../events/catalogue';
import { ObjectExistsError, type StoredObject } from '../adapters/storage';
import { type TraceContext, validTraceContext } from '../telemetry/trace-context';
import { userOf, type UseCase } from './use-case';
import type { Workflow, WorkflowDeps } from './workflow';

/**
 * A new take of the caller's recording meeting (the next audio_version), with the transcription
 * its live segments go to. not_found: no such meeting; invalid_state: not a recording meeting;
 * recording_open: a take of the meeting is still capturing.
 */
export const startTake: UseCase<Omit<StartInput, 'transcriptionId'>, Recording> = async (ctx, input) => {
  const userId = userOf(ctx);
  // The meeting's lock: starts one at a time, so the second sees the first's take (recording_open).
  // guard: take-start-meeting-lock | remove: , { forUpdate: true } | test: test/concurrency/recording.test.ts :: two starts at once
  const meeting = await getMeeting(ctx.tx, { userId }, input.meetingId, { forUpdate: true });
  if (!meeting) throw notFound('meeting');
  if (meeting.source_type !== 'recording') {
    throw new DomainError(
      'invalid_state',
      `the meeting's source_type is ${meeting.source_type}; live recording needs source_type recording`,
    );
  }
  const transcription = await createTranscription(ctx.tx, meeting.id, 'transcribing');
  const rec = await startRecording(ctx.tx, { ...input, meetingId: meeting.id, transcriptionId: transcription.id });
  ctx.emit(userId, changed('transcription', 'created', transcription.id, meeting.id));
  ctx.emit(userId, recordingChanged(meeting.id, 'created'));
  return rec;
};

/** Makes an instance the owner of a take whose capture is open; null when it is not (or no such take). */
export const claimTake: UseCase<
  { meetingId: string; audioVersion: number; ownerInstance: string; connectionId: string },
  (Recording & { previous_owner: string | null }) | null
> = async (ctx, { meetingId, audioVersion, ownerInstance, connectionId }) => {
  const rec = await claimRecording(ctx.tx, meetingId, audioVersion, ownerInstance);
  if (rec) {
    await recordEvent(ctx.tx, meetingId, 'recording_resumed', {
      audio_version: audioVersion,
      instance: ownerInstance,
      previous_owner: rec.previous_owner,
      connection_id: connectionId,
    });
  }
  return rec;
};

/** The last step of a stop, whoever stops the take. */
export interface StopCompletion {
  meetingId: string;
  audioVersion: number;
  userId: string;
  gapUploadDeadlineSeconds: number;
  /** What the history's recording_stopped entry holds beside the reason and the coverage (who stopped it, the ML drain). */
  history: Record<string, unknown>;
  /** Broadcast before `recording updated` (the recorder's last progress event). */
  events?: EventBody[];
}

export interface StopOutcome {
  /** false: the take was no longer stopping (another stopper finished it; nothing is recorded twice). */
  stopped: boolean;
  coverage: Coverage;
  gap_upload_deadline: string | null;
}

/**
 * stopping → stopped with its gap-upload deadline; the history records the stop with its
 * coverage and `recording updated` is broadcast. The recorder runs it at the end of its stop
 * sequence, the sweep for a take whose owner is gone. null when the take is gone (its account
 * was erased).
 */
export const completeStop: UseCase<StopCompletion, StopOutcome | null> = async (ctx, s) => {
  const rec = await markStopped(ctx.tx, s.meetingId, s.audioVersion, s.gapUploadDeadlineSeconds);
  const current = rec ?? (await getRecording(ctx.tx, s.meetingId, s.audioVersion));
  if (!current) return null;
  const cov = await coverage(ctx.tx, s.meetingId, s.audioVersion);
  if (rec) {
    await recordEvent(ctx.tx, s.meetingId, 'recording_stopped', {
      audio_version: s.audioVersion,
      reason: rec.stop_reason,
      ...s.history,
      highest_contiguous_sequence: cov.highest_contiguous_sequence,
      missing_ranges: cov.missing_ranges,
      frames_stored: cov.frames_stored,
      bytes_stored: cov.bytes_stored,
      gap_upload_deadline: rec.gap_upload_deadline,
    });
    for (const e of s.events ?? []) ctx.emit(s.userId, e);
    ctx.emit(s.userId, recordingChanged(s.meetingId));
  }
  return { stopped: rec !== null, coverage: cov, gap_upload_deadline: current.gap_upload_deadline };
};

/**
 * The owning live instance begins a stop: recording → stopping, with its history entry. False
 * when the take is not this owner's recording take any more (resumed elsewhere, stopped, gone).
 * No event: the take changes for clients when the stop completes (completeStop).
 */
export const beginStop: UseCase<
  { meetingId: string; audioVersion: number; reason: StopReason; owner: string },
  boolean
> = async (ctx, input) => {
  const { meetingId, audioVersion, reason, owner } = input;
  if (!(await markStopping(ctx.tx, meetingId, audioVersion, reason, { owner }))) return false;
  await recordEvent(ctx.tx, meetingId, 'stop_requested', { audio_version: audioVersion, reason, instance: owner });
  return true;
};

/**
 * Stops a take whose owner is gone (untouched for idleSeconds) with reason connection_closed;
 * false when it was resumed or stopped meanwhile. A take stuck in stopping (its owner died
 * mid-stop) keeps the reason it had.
 */
export const stopOrphanedTake: UseCase<
  { meetingId: string; audioVersion: number; idleSeconds: number; gapUploadDeadlineSeconds: number },
  boolean
> = async (ctx, input) => {
  const { meetingId, audioVersion } = input;
  const locked = await lockIdleTake(ctx.tx, meetingId, audioVersion, input.idleSeconds);
  if (!locked) return false;
  if (locked.state === 'recording') await markStopping(ctx.tx, meetingId, audioVersion, 'connection_closed');
  const done = await completeStop(ctx, {
    meetingId,
    audioVersion,
    userId: locked.user_id,
    gapUploadDeadlineSeconds: input.gapUploadDeadlineSeconds,
    history: { by: 'sweep' },
  });
  return done?.stopped ?? false;
};

// --- gap upload ------------------------------------------------------------------------------

/** A range's row written, or the identical range found already stored (its bytes still to compare). */
type GapStep = { stored: true; result: GapResult } | { stored: false; result: GapResult; existing: ManifestRow };

const overlapError = (up: GapUpload, rows: ManifestRow[]) => {
  const ranges = rows.map((r) => `${r.start_sequence}-${r.end_sequence}`).join(', ');
  return new DomainError(
    'already_exists',
    `frames ${up.start}-${up.end} overlap stored frames (${ranges}) with other bytes or another range; ` +
      'upload only the missing ranges',
  );
};

/**
 * The stored range's row, in the transaction that locks the take. A range that matches one
 * stored row exactly writes nothing and returns that row (uploadGap compares its bytes after the
 * commit, so storage reads never hold the lock). The caller's own take (the edge checked the
 * meeting).
 */
const storeGapRange: UseCase<GapUpload & { sha: string; object: StoredObject; objectName: string }, GapStep> = async (
  ctx,
  up,
) => {
  const { tx } = ctx;
  // The take's lock: one upload of a range at a time, so one is stored (201) and the rest see it (200).
  // guard: gap-upload-take-lock | remove: , { forUpdate: true } | test: test/concurrency/rest.test.ts :: same upload arrives 20 times at once
  const rec = await getRecording(tx, up.meetingId, up.audioVersion, { forUpdate: true });
  if (!rec) throw new DomainError('not_found', `recording audio_version ${up.audioVersion} not found`);
  assertGapWindowOpen(rec);
  const overlaps = await overlappingRows(tx, up.meetingId, up.audioVersion, up.start, up.end);
  const resultOf = async (): Promise<GapResult> => {
    const cov = await coverage(tx, up.meetingId, up.audioVersion);
    return {
      audio_version: up.audioVersion,
      start_sequence: up.start,
      end_sequence: up.end,
      byte_count: up.bytes.length,
      sha256: up.sha,
      highest_contiguous_sequence: cov.highest_contiguous_sequence,
      missing_ranges: cov.missing_ranges,
    };
  };
  if (overlaps.length) {
    const [row] = overlaps;
    if (overlaps.length === 1 && row.start_sequence === up.start && row.end_sequence === up.end)
      return { stored: false, result: await resultOf(), existing: row };
    throw overlapError(up, overlaps);
  }
  // Checked after the stored ranges: the sweep may have finalized the take since the first try of
  // this range was stored, and its retry is still answered 200 (docs/retries.md).
  // guard: gap-upload-new-range-closed | remove: assertTakesNewRanges(rec); | test: test/concurrency/gap-retry.test.ts :: new range whose check passed
  assertTakesNewRanges(rec);
  assertGapsBounded(await coverage(tx, up.meetingId, up.audioVersion), up.start, up.end);
  await insertManifestRow(tx, {
    meeting_id: up.meetingId,
    audio_version: up.audioVersion,
    start_sequence: up.start,
    end_sequence: up.end,
    started_at_ms: up.start * FRAME_MS,
    duration_ms: (up.end - up.start + 1) * FRAME_MS,
    object_name: up.objectName,
    object_generation: Number(up.object.generation),
    byte_count: up.bytes.length,
    crc32c: up.object.crc32c,
    sha256: up.sha,
  });
  await recordEvent(tx, up.meetingId, 'gap_uploaded', {
    audio_version: up.audioVersion,
    start_sequence: up.start,
    end_sequence: up.end,
    byte_count: up.bytes.length,
    sha256: up.sha,
  });
  ctx.emit(userOf(ctx), recordingChanged(up.meetingId));
  return { stored: true, result: await resultOf() };
};

/**
 * Stores one range of a stopped take: the object first (create-only, content-addressed), so that
 * storage latency does not hold the take's row lock, then its manifest row (storeGapRange).
 * `created` is false when the identical range was already there (a retry); the same range with
 * other bytes is already_exists. Our object is deleted unless a row references it.
 */
export const uploadGap: Workflow<GapUpload, { created: boolean; result: GapResult }> = async (ctx, up) => {
  const { store, db } = ctx.deps;
  const sha = sha256Hex(up.bytes);
  const name = gapObjectName(up.meetingId, up.audioVersion, up.start, up.end, sha);
  let created = true;
  let object: StoredObject;
  try {
    object = await store.write(name, up.bytes, { createOnly: true, contentType: 'application/octet-stream' });
  } catch (err) {
    if (!(err instanceof ObjectExistsError)) throw err;
    created = false; // same name = same range and sha256: an identical retry
    object = (await store.stat(name))!;
  }
  let referenced = false;
  try {
    const step = await ctx.run(storeGapRange, { ...up, sha, object, objectName: name });
    if (step.stored) {
      referenced = true;
      return { created: true, result: step.result };
    }
    referenced = step.existing.object_name === name;
    if (!(await sameBytes(store, step.existing, sha, up.bytes))) throw overlapError(up, [step.existing]);
    return { created: false, result: step.result };
  } finally {
    // Our object is garbage unless a row references it (a concurrent identical upload may).
    if (created && !referenced && !(await gapObjectReferenced(db, up, name)))
      await store.delete(name).catch(() => undefined);
  }
};

// --- finalize --------------------------------------------------------------------------------

// The sweep's claims (lib/repositories/finalize.ts), each taken right before its take's work. No
// event: the take changes for clients when it is finalized (markTakeFinalized).

/** stopped → finalizing; null when another sweep (or nothing) got there first. */
export const claimTakeToFinalize: UseCase<{ meetingId: string; audioVersion: number }, Recording | null> = (
  ctx,
  { meetingId, audioVersion },
) => claimForFinalize(ctx.tx, meetingId, audioVersion);

/** Finalizing takes whose sweep died (untouched for staleMs), each claimed again by one caller. */
export const reclaimStaleFinalizing: UseCase<{ staleMs: number }, Recording[]> = (ctx, { staleMs }) =>
  reclaimStale(ctx.tx, staleMs);

/** A failed finalize gives its claim back, so that the next sweep retries it at once. */
export const releaseFinalizeClaim: UseCase<Recording, void> = (ctx, rec) => releaseClaim(ctx.tx, rec);

/** finalizing → finalized with its audio, degradation and events; false when another sweep finalized it meanwhile. */
const markTakeFinalized: UseCase<
  {
    rec: Recording;
    storagePath: string | null;
    message: RecordingFinalized;
    framesStored: number;
    bytesStored: number;
  },
  boolean
> = async (ctx, input) => {
  const { rec, storagePath, message } = input;
  const userId = await markFinalized(ctx.tx, rec);
  if (!userId) return false;
  const emit = (entity: Entity, id: string) => ctx.emit(userId, changed(entity, 'updated', id, rec.meeting_id));
  if (storagePath) {
    await setTakeAudio(ctx.tx, rec, storagePath);
    emit('meeting_audio_file', rec.meeting_id);
  }
  if (message.is_degraded && rec.transcription_id && (await markDegraded(ctx.tx, rec.transcription_id)))
    emit('transcription', rec.transcription_id);
  await recordEvent(ctx.tx, rec.meeting_id, 'finalized', {
    audio_version: rec.audio_version,
    storage_path: storagePath,
    is_degraded: message.is_degraded,
    missing_ranges: message.missing_ranges,
    frames_stored: input.framesStored,
    bytes_stored: input.bytesStored,
  });
  emit('recording', rec.meeting_id);
  return true;
};

/** `recording.finalized` of a take: `attempt` 1 when finalized, one more each time the sweep offers it again. */
export function finalizedMessage(
  rec: Recording,
  storagePath: string | null,
  missingRanges: [number, number][],
  attempt: number,
): RecordingFinalized {
  return {
    meeting_id: rec.meeting_id,
    audio_version: rec.audio_version,
    transcription_id: rec.transcription_id,
    storage_path: storagePath,
    is_degraded: missingRanges.length > 0,
    missing_ranges: missingRanges,
    attempt,
  };
}

/** Publishes a take's `recording.finalized` to the ML batch workers. */
export const offerTake = (deps: Pick<FinalizeDeps, 'bus' | 'config'>, rec: Recording, message: RecordingFinalized) =>
  // The client's trace of the take's start goes on to the ML batch worker (checked again: a row
  // stored before validation existed must not fail the publish).
  offerBatchPass(deps, message, validTraceContext(rec.trace_context));

/** Publishes `recording.finalized` (a take's or an upload's) to the ML batch workers. */
export async function offerBatchPass(
  deps: Pick<FinalizeDeps, 'bus' | 'config'>,
  message: RecordingFinalized,
  trace: TraceContext | null = null,
): Promise<void> {
  await deps.bus.publish(deps.config.PUBSUB_TOPIC_RECORDING_FINALIZED, message, {
    meeting_id: message.meeting_id,
    audio_version: String(message.audio_version),
    ...trace,
  });
}

/** What finalizing a take needs beside the store: the bus and the topic of `recording.finalized`. */
export interface FinalizeDeps extends WorkflowDeps {
  bus: Bus;
  config: Pick<Config, 'PUBSUB_TOPIC_RECORDING_FINALIZED'>;
}

/**
 * Finalizes a take this caller claimed (claimTakeToFinalize): composes its audio, publishes
 * `recording.finalized`, then marks it finalized. The message is published before the take is
 * marked, so a crash in between repeats the publish (at least once; the ML batch worker's status
 * claim makes a repeat harmless) rather than losing it. Null when another sweep finalized it.
 */
export const finalizeTake: Workflow<Recording, RecordingFinalized | null, FinalizeDeps> = async (ctx, rec) => {
  const { deps } = ctx;
  const { rows, chain, cov } = await takeComposition(deps.db, rec);
  const storagePath = await composeAudio(deps.store, rec, chain);
  const message = finalizedMessage(rec, storagePath, cov.missing_ranges, 1);
  await offerTake(deps, rec, message);
  const bytesStored = chain.reduce((n, r) => n + r.byte_count, 0);
  const done = await ctx.run(markTakeFinalized, {
    rec,
    storagePath,
    message,
    framesStored: cov.frames_stored,
    bytesStored,
  });
  // The take was deleted while its audio was composed (its account erased): nothing would lead to
  // the object. A take still there was finalized by another sweep, whose audio this is too.
  if (!done && storagePath && !(await takeExists(deps.db, rec)))
    await deps.store.delete(storagePath).catch(() => undefined);
  if (done) {
    await deleteUnreferenced(deps, rec, rows).catch((err) =>
      deps.log.warn({ err: (err as Error).message }, 'could not delete unreferenced objects of a finalized take'),
    );
  }
  return done ? message : null;
};
