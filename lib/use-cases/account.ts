// The caller's account: the erasure request (a use case), then its rows and objects
// (continueErasure; the sweep's resumeErasures finishes what a request left).
import { removeMeetingObjects } from '../objects/meeting-objects';
import {
  eraseRowBatch,
  erasureMeetings,
  erasuresDue,
  finishErasure,
  meetingObjectsErased,
  requestErasure,
} from '../repositories/erasure';
import { cancelExports, removeExportObjects } from './account-exports';
import { userOf, type UseCase } from './use-case';
import type { Workflow } from './workflow';

/**
 * Records the erasure request, stops the user's open takes and cancels their unfinished account
 * exports; the rows and objects go after (continueErasure).
 */
export const requestAccountErasure: UseCase<void, void> = async (ctx) => {
  await requestErasure(ctx.tx, userOf(ctx));
  await cancelExports(ctx, undefined);
};

// The steps after the request emit no event: the user they would go to is gone.
const eraseRows: UseCase<string, 'more' | 'done'> = (ctx, userId) => eraseRowBatch(ctx.tx, userId);
const meetingErased: UseCase<{ userId: string; meetingId: string }, void> = (ctx, { userId, meetingId }) =>
  meetingObjectsErased(ctx.tx, userId, meetingId);
const finish: UseCase<string, void> = (ctx, userId) => finishErasure(ctx.tx, userId);

/**
 * Steps 2 and 3 until done or `deadline` (epoch ms) passes: true when the erasure is finished
 * (no row and no object of the user remain), false when work is left for the sweep.
 */
export const continueErasure: Workflow<{ userId: string; deadline?: number }, boolean> = async (ctx, input) => {
  const { userId, deadline = Infinity } = input;
  while ((await ctx.run(eraseRows, userId)) === 'more') if (Date.now() >= deadline) return false;
  const meetingIds = await erasureMeetings(ctx.deps.db, userId);
  if (!meetingIds) return true; // finished by someone else
  for (const meetingId of meetingIds) {
    if (Date.now() >= deadline) return false;
    await removeMeetingObjects(ctx.deps.store, meetingId);
    await ctx.run(meetingErased, { userId, meetingId });
  }
  // Every archive of the user's account exports (their rows went with the user's; a builder still
  // at work finds its export gone and deletes what it wrote).
  await removeExportObjects(ctx.deps.store, userId);
  await ctx.run(finish, userId);
  return true;
};

export interface ResumeOptions {
  /** Requests untouched this long are taken up (a live request is still working on its own). */
  minAgeMs: number;
  batch: number;
  /** Time one sweep pass spends on erasures (default 60 s); what is left goes on next pass. */
  budgetMs?: number;
}

/** The sweep's part: erasures a request left unfinished (crashed, timed out, storage down). */
export const resumeErasures: Workflow<ResumeOptions, { finished: number; pending: number }> = async (ctx, opts) => {
  const due = await erasuresDue(ctx.deps.db, opts.minAgeMs, opts.batch);
  let finished = 0;
  let pending = 0;
  const deadline = Date.now() + (opts.budgetMs ?? 60_000);
  for (const userId of due) {
    if (Date.now() >= deadline) {
      pending++;
      continue;
    }
    try {
      if (await continueErasure(ctx, { userId, deadline })) finished++;
      else pending++;
    } catch (err) {
      pending++;
      ctx.deps.log.warn(
        { err: (err as Error).message, user_id: userId },
        'sweep: account erasure failed; the next pass retries',
      );
    }
  }
  return { finished, pending };
};
