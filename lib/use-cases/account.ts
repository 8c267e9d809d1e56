// The caller's account: the erasure request (a use case), then its rows and objects
// (continueErasure; the sweep's resumeErasures finishes what a request left).
import type { ObjectStore } from '../adapters/storage';
import type { Database } from '../db/pool';
import { removeMeetingObjects } from '../objects/meeting-objects';
import {
  eraseRowBatch,
  erasureMeetings,
  erasuresDue,
  finishErasure,
  meetingObjectsErased,
  requestErasure,
} from '../repositories/erasure';
import type { Logger } from '../telemetry/log';
import { userOf, type UseCase } from './use-case';

export interface ErasureDeps {
  db: Database;
  store: ObjectStore;
  log: Logger;
}

/** Records the erasure request and stops the user's open takes; the rows and objects go after (continueErasure). */
export const requestAccountErasure: UseCase<void, void> = async (ctx) => {
  await requestErasure(ctx.tx, userOf(ctx));
};

/**
 * Steps 2 and 3 until done or `deadline` (epoch ms) passes: true when the erasure is finished
 * (no row and no object of the user remain), false when work is left for the sweep.
 */
export async function continueErasure(deps: ErasureDeps, userId: string, deadline = Infinity): Promise<boolean> {
  while ((await eraseRowBatch(deps.db, userId)) === 'more') if (Date.now() >= deadline) return false;
  const meetingIds = await erasureMeetings(deps.db, userId);
  if (!meetingIds) return true; // finished by someone else
  for (const meetingId of meetingIds) {
    if (Date.now() >= deadline) return false;
    await removeMeetingObjects(deps.store, meetingId);
    await meetingObjectsErased(deps.db, userId, meetingId);
  }
  await finishErasure(deps.db, userId);
  return true;
}

export interface ResumeOptions {
  /** Requests untouched this long are taken up (a live request is still working on its own). */
  minAgeMs: number;
  batch: number;
  /** Time one sweep pass spends on erasures (default 60 s); what is left goes on next pass. */
  budgetMs?: number;
}

/** The sweep's part: erasures a request left unfinished (crashed, timed out, storage down). */
export async function resumeErasures(
  deps: ErasureDeps,
  opts: ResumeOptions,
): Promise<{ finished: number; pending: number }> {
  const due = await erasuresDue(deps.db, opts.minAgeMs, opts.batch);
  let finished = 0;
  let pending = 0;
  const deadline = Date.now() + (opts.budgetMs ?? 60_000);
  for (const user_id of due) {
    if (Date.now() >= deadline) {
      pending++;
      continue;
    }
    try {
      if (await continueErasure(deps, user_id, deadline)) finished++;
      else pending++;
    } catch (err) {
      pending++;
      deps.log.warn({ err: (err as Error).message, user_id }, 'sweep: account erasure failed; the next pass retries');
    }
  }
  return { finished, pending };
}
