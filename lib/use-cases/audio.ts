// A meeting's uploaded audio file: the object is stored first (a streamed body, no transaction
// open while it arrives), then the meeting points at it in a unit of work, then the object it
// pointed at before is deleted.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ObjectTooLargeError, type StoredObject } from '../adapters/storage';
import { DomainError, notFound, unprocessable } from '../errors';
import { changed } from '../events/catalogue';
import { setAudioFile } from '../repositories/audio';
import { getMeeting } from '../repositories/meetings';
import { userOf, type UseCase } from './use-case';
import type { Workflow } from './workflow';

export interface UploadedAudio {
  meeting_id: string;
  storage_path: string;
  content_type: string;
  byte_count: number;
  created_at: string;
}

/** Points the meeting at an object already stored; `previous` is the object it pointed at before. */
const attachUploadedAudio: UseCase<
  Omit<UploadedAudio, 'created_at'>,
  { file: UploadedAudio; previous: string | null }
> = async (ctx, input) => {
  const userId = userOf(ctx);
  const { meeting_id: id, storage_path, content_type, byte_count } = input;
  const set = await setAudioFile(ctx.tx, id, storage_path);
  ctx.emit(userId, changed('meeting_audio_file', set.previous ? 'updated' : 'created', id, id));
  return {
    file: { meeting_id: id, storage_path, content_type, byte_count, created_at: set.file.created_at },
    previous: set.previous,
  };
};

const EMPTY = 'the body is empty; send the audio file';

/**
 * Stores an upload meeting's audio (at most maxBytes, too_large past it) and points the
 * meeting at it; `created` is false when it replaced an earlier upload (deleted once the change
 * committed). not_found: no such meeting of the caller; invalid_state: not an upload meeting.
 */
export const uploadMeetingAudio: Workflow<
  { meetingId: string; contentType: string; maxBytes: number; body: Readable | null },
  { created: boolean; result: UploadedAudio }
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
  let attached: { file: UploadedAudio; previous: string | null };
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
  const { file, previous } = attached;
  if (previous && previous !== name) await store.delete(previous).catch(() => undefined);
  return { created: previous === null, result: file };
};
