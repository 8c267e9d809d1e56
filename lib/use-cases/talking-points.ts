// Talking points of a meeting (written by the ML service, deleted by their user).
import { SERVICE } from '../domain/actor';
import { getMeeting } from '../repositories/meetings';
import * as points from '../repositories/talking-points';
import type { TalkingPoint } from '../repositories/talking-points';
import { notFound } from '../errors';
import { changed, talkingPointEvent } from '../events/catalogue';
import type { UseCase } from './use-case';

export const createTalkingPoint: UseCase<{ meetingId: string; body: points.TalkingPointInput }, TalkingPoint> = async (
  ctx,
  { meetingId, body },
) => {
  const meeting = await getMeeting(ctx.tx, SERVICE, meetingId);
  if (!meeting) throw notFound('meeting');
  const tp = await points.createTalkingPoint(ctx.tx, meeting.id, body);
  ctx.emit(meeting.user_id, talkingPointEvent(meeting.id, { ...tp }));
  return tp;
};

export const deleteTalkingPoint: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  const tp = await points.softDeleteTalkingPoint(ctx.tx, ctx.actor, id);
  if (!tp) throw notFound('talking point');
  ctx.emit(tp.user_id, changed('talking_point', 'deleted', id, tp.meeting_id));
};
