// A meeting's uploaded audio file: the object is stored first (a streamed body, no transaction
// open while it arrives), then the meeting points at it in a unit of work with a new (pending)
// transcription, then the ML batch pass is offered it as a take's is (`recording.finalized`,
// source `upload`), then the object it pointed at before is deleted.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ObjectTooLargeError, type StoredObject } from '../adapters/storage';
import { DomainError, notFound, unprocessable } from '../errors';
import { changed } from '../events/catalogue';
import type { RecordingFinalized } from '../ml/contract';
import { setAudioFile, unfinishedPass } from '../repositories/audio';
import { getMeeting } from '../repositories/meetings';
import { createTranscription, getTranscription, updateTranscription } from '../repositories/transcriptions';
import { offerBatchPass, type FinalizeDeps } from './recording';
import { userOf, type UseCase } from './use-case';
import type { Workflow } from './workflow';

export interface UploadedAudio {
  meeting_id: string;
  storage_path: string;
  content_type: string;
  byte_count: number;
  created_at: string;
}

/** An upload's `recording.finalized`: the uploaded object, `attempt` counting offers as a take's. */
export const uploadMessage = (
  meetingId: string,
  transcriptionId: string,
  storagePath: string,
  attempt: number,
): RecordingFinalized => ({
  meeting_id: meetingId,
  audio_version: 1,
  transcription_id: transcriptionId,
  storage_path: storagePath,
  is_degraded: false,
  missing_ranges: [],
  attempt,
  source: 'upload',
});

const busy = (status: string) =>
  new DomainError(
    'invalid_state',
    `the meeting's audio is being transcribed (${status}); upload again once its transcription is completed or failed`,
  );

/**
 * Points the meeting at an object already stored, with a pending transcription for its batch
 * pass; `previous` is the object it pointed at before. invalid_state while a pass is unfinished.
 */
const attachUploadedAudio: UseCase<
  Omit<UploadedAudio, 'created_at'>,
  { file: UploadedAudio; previous: string | null; transcriptionId: string }
> = async (ctx, input) => {
  const userId = userOf(ctx);
  const { meeting_id: id, storage_path, content_type, byte_count } = input;
  const set = await setAudioFile(ctx.tx, id, storage_path);
  // Checked again under the meeting's lock (setAudioFile's): two uploads cannot both start a pass.
  // guard: upload-one-pass | remove: if (unfinished) throw busy(unfinished.status); | test: test/api/audio.test.ts :: both past their first check
  const unfinished = await unfinishedPass(ctx.tx, id);
  if (unfinished) throw busy(unfinished.status);
  const transcription = await createTranscription(ctx.tx, id, 'pending');
  ctx.emit(userId, changed('meeting_audio_file', set.previous ? 'updated' : 'created', id, id));
  ctx.emit(userId, changed('transcription', 'created', transcription.id, id));
  return {
    file: { meeting_id: id, storage_path, content_type, byte_count, created_at: set.file.created_at },
    previous: set.previous,
    transcriptionId: transcription.id,
  };
};

/**
 * pending → transcribing with `recording.finalized` published before the commit, the row locked:
 * a worker that claims at once waits for the commit and finds it transcribing; a publish that
 * fails rolls the move back. False when it is no longer pending (offered meanwhile).
 */
export const offerUpload: UseCase<{ message: RecordingFinalized; publish: () => Promise<void> }, boolean> = async (
  ctx,
  { message, publish },
) => {
  const id = message.transcription_id!;
  // no guard: only spares a racing sweep a second publish (harmless: the claim dedupes it).
  const current = await getTranscription(ctx.tx, ctx.actor, id, { forUpdate: true });
  if (current?.status !== 'pending') return false;
  const t = await updateTranscription(
    ctx.tx,
    id,
    { status: 'transcribing', status_message: 'batch pass offered' },
    { leaseSeconds: 0 },
  );
  await publish();
  ctx.emit(t.user_id, changed('transcription', 'updated', t.id, t.meeting_id));
  return true;
};

/** A pass that could not be offered ends failed (so that another upload may start one). */
const markUnoffered: UseCase<{ transcriptionId: string }, void> = async (ctx, { transcriptionId }) => {
  const t = await updateTranscription(
    ctx.tx,
    transcriptionId,
    { status: 'failed', status_message: 'the batch pass could not be offered; upload the file again' },
    { leaseSeconds: 0 },
  );
  ctx.emit(t.user_id, changed('transcription', 'updated', t.id, t.meeting_id));
};

const EMPTY = 'the body is empty; send the audio file';

/**
 * Stores an upload meeting's audio (at most maxBytes, too_large past it), points the meeting at
 * it and offers its batch pass; `created` is false when it replaced an earlier upload (deleted
 * once the change committed). not_found: no such meeting of the caller; invalid_state: not an
 * upload meeting, or its batch pass is unfinished; unavailable: the pass could not be offered
 * (the file is stored, its transcription failed).
 */
export const uploadMeetingAudio: Workflow<
  { meetingId: string; contentType: string; maxBytes: number; body: Readable | null },
  { created: boolean; result: UploadedAudio },
  Pick<FinalizeDeps, 'db' | 'store' | 'log' | 'events' | 'bus' | 'config'>
> = async (ctx, input) => {
  const { db, store } = ctx.deps;
  const { meetingId: id, contentType, maxBytes } = input;
  const meeting = await getMeeting(db, ctx.actor, id);
  if (!meeting) throw notFound('meeting');
  if (meeting.source_type !== 'upload')
    throw new DomainError(
      'invalid_state',
      `audio can only be uploaded to a meeting of source_type upload (this one is ${meeting.source_type})`,
    );
  if (!input.body) throw unprocessable(EMPTY);
  // Answered before the body is stored; checked again under the meeting's lock.
  const running = await unfinishedPass(db, id);
  if (running) throw busy(running.status);

  const name = `uploads/${id}/${randomUUID()}`;
  let stored: StoredObject;
  try {
    stored = await store.write(name, input.body, { contentType, maxBytes, createOnly: true });
  } catch (err) {
    if (err instanceof ObjectTooLargeError) throw new DomainError('too_large', `the audio exceeds ${maxBytes} bytes`);
    throw err;
  }
  const discard = () => store.delete(name).catch(() => undefined);
  if (stored.size === 0) {
    await discard();
    throw unprocessable(EMPTY);
  }
  let attached: Awaited<ReturnType<typeof attachUploadedAudio>>;
  try {
    attached = await ctx.run(attachUploadedAudio, {
      meeting_id: id,
      storage_path: name,
      content_type: contentType,
      byte_count: stored.size,
    });
  } catch (err) {
    await discard();
    throw err;
  }
  const { file, previous, transcriptionId } = attached;
  if (previous && previous !== name) await store.delete(previous).catch(() => undefined);
  const message = uploadMessage(id, transcriptionId, name, 1);
  try {
    await ctx.run(offerUpload, { message, publish: () => offerBatchPass(ctx.deps, message) });
  } catch (err) {
    ctx.deps.log.warn(
      { err: String(err), transcription_id: transcriptionId },
      'the batch pass of an upload was not offered',
    );
    await ctx.run(markUnoffered, { transcriptionId });
    throw new DomainError(
      'unavailable',
      'the audio is stored but its transcription could not be started; upload it again',
      undefined,
      5,
    );
  }
  return { created: previous === null, result: file };
};
