// Speaker labels of a meeting's transcript assigned to people (and their voice samples).
import * as labels from '../repositories/speaker-label-assignments';
import { notFound } from '../errors';
import { changed } from '../events/catalogue';
import { userOf, type UseCase, type UseCaseContext } from './use-case';

/** One event for the bulk relabel (id null: the client refetches the meeting's segments), one per person whose model changed. */
function relabelled(ctx: UseCaseContext, userId: string, meetingId: string, people: string[]): void {
  ctx.emit(userId, changed('transcript_segment', 'updated', null, meetingId));
  for (const personId of people) ctx.emit(userId, changed('person', 'updated', personId, null));
}

export const assignSpeakerLabel: UseCase<
  { meetingId: string; speakerLabel: string; personId: string },
  { updated_count: number }
> = async (ctx, { meetingId, speakerLabel, personId }) => {
  const userId = userOf(ctx);
  const { updated_count, people } = await labels.assignSpeakerLabel(ctx.tx, userId, meetingId, speakerLabel, personId);
  relabelled(ctx, userId, meetingId, people);
  return { updated_count };
};

export const unassignSpeakerLabel: UseCase<{ meetingId: string; speakerLabel: string }, void> = async (
  ctx,
  { meetingId, speakerLabel },
) => {
  const userId = userOf(ctx);
  const result = await labels.unassignSpeakerLabel(ctx.tx, userId, meetingId, speakerLabel);
  if (!result) throw notFound('speaker-label assignment');
  relabelled(ctx, userId, meetingId, result.people);
};
