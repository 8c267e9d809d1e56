// Transcriptions of a meeting and their segments (written by the ML service; a segment's text
// and speaker corrected by its user).
import { SERVICE } from '../domain/actor';
import { getMeeting } from '../repositories/meetings';
import * as segments from '../repositories/transcript-segments';
import { moveSegmentToLabel } from '../repositories/speaker-label-assignments';
import { lockSpeakerIdentity, survivingPeople } from '../repositories/people';
import type { Segment } from '../repositories/transcript-segments';
import * as transcriptions from '../repositories/transcriptions';
import type { Transcription } from '../repositories/transcriptions';
import { DomainError, notFound } from '../errors';
import { changed, segmentEvent } from '../events/catalogue';
import { checkPrecondition, userOf, type Precondition, type UseCase, type UseCaseContext } from './use-case';

export const createTranscription: UseCase<{ meetingId: string }, Transcription> = async (ctx, { meetingId }) => {
  // guard: transcription-create-meeting-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: a transcription of a meeting whose delete
  const meeting = await getMeeting(ctx.tx, ctx.actor, meetingId, { forUpdate: true });
  if (!meeting) throw notFound('meeting');
  const t = await transcriptions.createTranscription(ctx.tx, meeting.id);
  ctx.emit(meeting.user_id, changed('transcription', 'created', t.id, meeting.id));
  return t;
};

/**
 * A status change (the batch pass's claim and its renewal among them: see the repository). `claim`
 * is the ML-Claim the caller sent; the lease of a new or renewed claim lasts `leaseSeconds`.
 */
export const updateTranscription: UseCase<
  { id: string; patch: transcriptions.TranscriptionPatch; claim?: string; leaseSeconds: number },
  Transcription & transcriptions.BatchClaim
> = async (ctx, { id, patch, claim, leaseSeconds }) => {
  const { user_id, ...t } = await transcriptions.updateTranscription(ctx.tx, id, patch, { claim, leaseSeconds });
  ctx.emit(user_id, changed('transcription', 'updated', t.id, t.meeting_id));
  return t;
};

export const updateSegment: UseCase<
  { id: string; patch: segments.SegmentPatch; precondition?: Precondition },
  Segment
> = async (ctx, { id, patch, precondition }) => {
  // A new speaker: the user's speaker-identity lock first (the order every identity change keeps),
  // then If-Match on the row as read; the segment takes that label's person, its voice sample follows.
  const label = patch.speaker_label;
  // guard: segment-relabel-identity-lock | remove: if (label !== undefined) await lockSpeakerIdentity(ctx.tx, userOf(ctx)); | test: test/concurrency/speaker-identity.test.ts :: a segment's move to another speaker
  if (label !== undefined) await lockSpeakerIdentity(ctx.tx, userOf(ctx));
  // guard: segment-patch-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match PATCH of a 'segment'
  await checkPrecondition(precondition, () => segments.getSegment(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const people = label === undefined ? [] : await moveSegmentToLabel(ctx.tx, userOf(ctx), id, label);
  const found = await segments.updateSegment(ctx.tx, ctx.actor, id, patch);
  if (!found) throw notFound('segment');
  const { meeting_id, user_id, ...segment } = found;
  ctx.emit(user_id, changed('transcript_segment', 'updated', id, meeting_id));
  for (const personId of people) ctx.emit(user_id, changed('person', 'updated', personId, null));
  return segment;
};

/** The transcription (any user's: the ML service writes it), locked while its segments change. */
async function lockedTranscription(ctx: UseCaseContext, transcriptionId: string) {
  // An assignment of a label holds the meeting's transcriptions (FOR SHARE): an append waits for
  // it, then re-applies the stored assignments, its own included. An append reads the status on
  // the locked row: a completion committing meanwhile is waited for, then seen.
  // guard: append-after-completion-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: an append racing the completion
  // guard: append-transcription-lock | remove: , { forUpdate: true } | test: test/concurrency/speaker-identity.test.ts :: append that starts while its label is being assigned
  const t = await transcriptions.getTranscription(ctx.tx, SERVICE, transcriptionId, { forUpdate: true });
  if (!t) throw notFound('transcription');
  return t;
}

/** The segments with each person_id replaced by the person it stands for now (a merged one followed); 422 for others' or unknown people. */
async function attributed(ctx: UseCaseContext, userId: string, input: segments.SegmentInput[]) {
  const people = await survivingPeople(
    ctx.tx,
    userId,
    input.map((s) => s.person_id),
  );
  return people.size ? input.map((s) => (s.person_id ? { ...s, person_id: people.get(s.person_id) } : s)) : input;
}

/** A finished transcript is final: a late live write (a slow drain's tail) must not change it. */
const FINISHED = new Set(['completed', 'failed']);

export const appendSegments: UseCase<{ transcriptionId: string; segments: segments.SegmentInput[] }, void> = async (
  ctx,
  { transcriptionId, segments: input },
) => {
  const t = await lockedTranscription(ctx, transcriptionId);
  if (FINISHED.has(t.status))
    throw new DomainError('invalid_state', `transcription is ${t.status}: live segments are no longer accepted`);
  const { broadcast, people } = await segments.appendSegments(
    ctx.tx,
    transcriptionId,
    await attributed(ctx, t.user_id, input),
  );
  for (const segment of broadcast) ctx.emit(t.user_id, segmentEvent(t.meeting_id, transcriptionId, segment));
  // Attributed segments with an embedding became voice samples: those people's models changed.
  for (const personId of people) ctx.emit(t.user_id, changed('person', 'updated', personId, null));
};

export const replaceSegments: UseCase<{ transcriptionId: string; segments: segments.SegmentInput[] }, void> = async (
  ctx,
  { transcriptionId, segments: input },
) => {
  const t = await lockedTranscription(ctx, transcriptionId);
  if (await segments.isInProcessing(ctx.tx, transcriptionId))
    throw new DomainError('invalid_state', 'transcription is still in processing state');
  const people = await segments.replaceSegments(ctx.tx, transcriptionId, await attributed(ctx, t.user_id, input));
  ctx.emit(t.user_id, changed('transcript_segment', 'updated', null, t.meeting_id));
  for (const personId of people) ctx.emit(t.user_id, changed('person', 'updated', personId, null));
};
