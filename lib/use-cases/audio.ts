// A meeting's uploaded audio file.
import { setAudioFile } from '../repositories/audio';
import { changed } from '../events/catalogue';
import { userOf, type UseCase } from './use-case';

export interface UploadedAudio {
  meeting_id: string;
  storage_path: string;
  content_type: string;
  byte_count: number;
  created_at: string;
}

/**
 * Points the meeting at an object already stored; `replaced` hears of the object it pointed at
 * before (in the transaction: the committed attempt's call is the one that counts), which the
 * caller deletes once the change committed.
 */
export const attachUploadedAudio: UseCase<
  Omit<UploadedAudio, 'created_at'> & { replaced(previous: string | null): void },
  UploadedAudio
> = async (ctx, input) => {
  const userId = userOf(ctx);
  const { meeting_id: id, storage_path, content_type, byte_count } = input;
  const set = await setAudioFile(ctx.tx, id, storage_path);
  input.replaced(set.previous);
  ctx.emit(userId, changed('meeting_audio_file', set.previous ? 'updated' : 'created', id, id));
  return { meeting_id: id, storage_path, content_type, byte_count, created_at: set.file.created_at };
};
