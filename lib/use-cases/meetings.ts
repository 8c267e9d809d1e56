// Meetings: create, update, soft-delete, purge; their attendees; the synthesis the ML service writes.
import { addAttendee as insertAttendee, removeAttendee as deleteAttendee } from '../repositories/attendees';
import { SERVICE } from '../domain/actor';
import * as meetings from '../repositories/meetings';
import type { Meeting } from '../repositories/meetings';
import { removeMeetingObjects } from '../objects/meeting-objects';
import { ownsPerson } from '../repositories/people';
import {
  deleteMeetings,
  lockForPurge,
  meetingsDueForPurge,
  ownersOfPeople,
  PURGE_BATCH_MEETINGS,
  PURGE_MAX_BATCHES,
} from '../repositories/purge';
import { removeMeetingVoiceSamples } from '../repositories/voice-samples';
import { replaceSynthesis as writeSynthesis, type SynthesisInput } from '../repositories/synthesis';
import { notFound, unprocessable } from '../errors';
import { changed } from '../events/catalogue';
import { checkPrecondition, userOf, type Precondition, type UseCase, type UseCaseContext } from './use-case';
import type { Workflow } from './workflow';

export const createMeeting: UseCase<meetings.MeetingInput, Meeting> = async (ctx, body) => {
  const userId = userOf(ctx);
  const meeting = await meetings.createMeeting(ctx.tx, userId, body);
  ctx.emit(userId, changed('meeting', 'created', meeting.id, meeting.id));
  return meeting;
};

export const updateMeeting: UseCase<
  { id: string; patch: meetings.MeetingPatch; precondition?: Precondition },
  Meeting
> = async (ctx, { id, patch, precondition }) => {
  // guard: meeting-patch-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match PATCH of a 'meeting'
  await checkPrecondition(precondition, () => meetings.getMeeting(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const meeting = await meetings.updateMeeting(ctx.tx, ctx.actor, id, patch);
  if (!meeting) throw notFound('meeting');
  ctx.emit(meeting.user_id, changed('meeting', 'updated', meeting.id, meeting.id));
  return meeting;
};

/** Soft-deletes the meeting; its tasks are detached from it (each an update). */
export const deleteMeeting: UseCase<{ id: string; precondition?: Precondition }, void> = async (
  ctx,
  { id, precondition },
) => {
  // guard: meeting-delete-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match DELETE of a 'meeting'
  await checkPrecondition(precondition, () => meetings.getMeeting(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const deleted = await meetings.softDeleteMeeting(ctx.tx, ctx.actor, id);
  if (!deleted) throw notFound('meeting');
  const owner = deleted.meeting.user_id;
  ctx.emit(owner, changed('meeting', 'deleted', id, id));
  for (const taskId of deleted.detachedTaskIds) ctx.emit(owner, changed('task', 'updated', taskId, null));
};

/** The meeting and the person, both the caller's; an event only when something changed. */
async function attendeeOf(ctx: UseCaseContext, meetingId: string, personId: string): Promise<string> {
  const userId = userOf(ctx);
  if (!(await meetings.getMeeting(ctx.tx, { userId }, meetingId))) throw notFound('meeting');
  if (!(await ownsPerson(ctx.tx, userId, personId)))
    throw unprocessable('person does not exist', [{ path: 'personId', message: 'person does not exist' }]);
  return userId;
}

export const addAttendee: UseCase<{ meetingId: string; personId: string }, void> = async (
  ctx,
  { meetingId, personId },
) => {
  const userId = await attendeeOf(ctx, meetingId, personId);
  if (await insertAttendee(ctx.tx, meetingId, personId))
    ctx.emit(userId, changed('meeting_attendee', 'created', personId, meetingId));
};

export const removeAttendee: UseCase<{ meetingId: string; personId: string }, void> = async (
  ctx,
  { meetingId, personId },
) => {
  const userId = await attendeeOf(ctx, meetingId, personId);
  if (await deleteAttendee(ctx.tx, meetingId, personId))
    ctx.emit(userId, changed('meeting_attendee', 'deleted', personId, meetingId));
};

/** The ML service's summary, topics, … of any user's meeting. */
export const replaceSynthesis: UseCase<{ meetingId: string; synthesis: SynthesisInput }, void> = async (
  ctx,
  { meetingId, synthesis },
) => {
  // guard: synthesis-meeting-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: a synthesis of a meeting whose delete
  const meeting = await meetings.getMeeting(ctx.tx, SERVICE, meetingId, { forUpdate: true });
  if (!meeting) throw notFound('meeting');
  await writeSynthesis(ctx.tx, meetingId, synthesis);
  ctx.emit(meeting.user_id, changed('meeting', 'updated', meetingId, meetingId));
  if (synthesis.topics) ctx.emit(meeting.user_id, changed('topic', 'updated', null, meetingId));
};

/** Deletes a batch of meetings still due for purge (their objects are gone already); how many. */
const purgeMeetingRows: UseCase<{ ids: string[]; afterDays: number }, number> = async (
  ctx,
  { ids: due, afterDays },
) => {
  const ids = await lockForPurge(ctx.tx, due, afterDays);
  if (!ids.length) return 0;
  // Their segments' samples go first: the people's models are recomputed without them.
  const people = await removeMeetingVoiceSamples(ctx.tx, ids);
  for (const p of await ownersOfPeople(ctx.tx, people)) ctx.emit(p.user_id, changed('person', 'updated', p.id, null));
  return deleteMeetings(ctx.tx, ids);
};

/**
 * The sweep's purge (lib/repositories/purge.ts): meetings soft-deleted more than afterDays ago, in
 * batches, each meeting's stored objects first and then the rows in a unit of work; how many.
 */
export const purgeDeletedMeetings: Workflow<
  { afterDays: number; batch?: number; maxBatches?: number },
  number
> = async (ctx, { afterDays, ...opts }) => {
  const batch = opts.batch ?? PURGE_BATCH_MEETINGS;
  let purged = 0;
  for (let b = 0; b < (opts.maxBatches ?? PURGE_MAX_BATCHES); b++) {
    const ids = await meetingsDueForPurge(ctx.deps.db, afterDays, batch);
    if (!ids.length) break;
    for (const id of ids) await removeMeetingObjects(ctx.deps.store, id);
    purged += await ctx.run(purgeMeetingRows, { ids, afterDays });
    if (ids.length < batch) break;
  }
  return purged;
};
