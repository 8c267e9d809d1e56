// The periodic sweep (functions-framework target `sweep`; the local stack calls runSweep every
// RECORDING_GAP_SWEEP_INTERVAL_SECONDS). One pass:
//  1. stops takes whose capture is open but whose owning live instance is gone (no heartbeat,
//     no lease) and that nobody resumed within RECORDING_DISCONNECT_GRACE_SECONDS,
//  2. finalizes stopped takes with no missing range or past their gap upload deadline
//     (lib/use-cases/recording.ts finalizeTake), retrying claims a crashed sweep left behind,
//     but a take the server stopped (connection_closed, max_duration) waits for its deadline (frames never sent),
//  3. releases the ML batch pass's expired claims: the take is offered again (recording.finalized,
//     attempt n + 1) or given up after ML_BATCH_MAX_ATTEMPTS (lib/use-cases/batch-claims.ts),
//     then republishes outbox events whose publish failed,
//  4. creates the outbox's daily and the manifest's monthly partitions ahead, drops the outbox's
//     days past EVENT_RETENTION_HOURS and the manifest's past months left empty
//     (lib/repositories/partitions.ts); deletes the outbox's leftovers past it, expired idempotency
//     records and webhook attempts older than 7 days, in bounded batches (lib/repositories/retention.ts),
//  5. deletes the Pub/Sub topic and subscription of each live instance that died without shutting
//     down (its Firestore mark lapsed; the tabs it held reconnect elsewhere and replay;
//     lib/fanout/liveness.ts),
//  6. builds pending account exports (alongside the other steps, one export at a time under a lease,
//     lib/use-cases/account-exports.ts) and deletes those past ACCOUNT_EXPORT_RETENTION_HOURS,
//  7. finishes account erasures a DELETE /me left unfinished (lib/use-cases/account.ts) — first of
//     all, so that no take of an account being erased is finalized — and purges meetings
//     soft-deleted more than MEETING_PURGE_AFTER_DAYS ago (lib/use-cases/meetings.ts).
// Auth of the HTTP target: in staging/production the function is private — only the Cloud
// Scheduler's service account holds run.invoker and Google's front end verifies its OIDC token
// before any code runs — so the handler checks nothing more. In development/test (no IAM in
// front) it requires `Authorization: Bearer <SERVICE_AUTH_TOKEN>`.
import { sleep } from '@mi/lib/async';
import { deleteDeadInstanceTopics, instanceTopicReads } from '@mi/lib/fanout/liveness';
import { DomainError } from '@mi/lib/errors';
import { bearerToken, safeEqual } from '@mi/lib/adapters/auth';
import type { Coordination } from '@mi/lib/adapters/coordination';
import { SERVICE } from '@mi/lib/domain/actor';
import { dueTakes } from '@mi/lib/repositories/finalize';
import { idleTakes, OWNER_STALE_SECONDS, recordingLeaseKey, type Recording } from '@mi/lib/repositories/recordings';
import { resumeErasures } from '@mi/lib/use-cases/account';
import { runAccountExports } from '@mi/lib/use-cases/account-exports';
import { ensurePartitions, PARTITIONED_TABLES } from '@mi/lib/repositories/partitions';
import { pruneExpired } from '@mi/lib/repositories/retention';
import type { Runtime } from '@mi/lib/adapters/runtime';
import { purgeDeletedMeetings } from '@mi/lib/use-cases/meetings';
import { releaseExpiredClaims } from '@mi/lib/use-cases/batch-claims';
import {
  claimTakeToFinalize,
  finalizeTake,
  reclaimStaleFinalizing,
  releaseFinalizeClaim,
  stopOrphanedTake,
} from '@mi/lib/use-cases/recording';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { traceIdOf } from '@mi/lib/telemetry/trace-context';
import { withIncomingSpan } from '@mi/lib/telemetry/tracing';
import { toProblem } from '@mi/lib/errors/problem';

export type SweepRuntime = Pick<Runtime, 'config' | 'db' | 'store' | 'bus' | 'events' | 'log'>;

export interface SweepOptions {
  /**
   * Lease lookups (an idle-looking take whose lease is still held is left alone) and the live
   * instances' marks (a topic of an unmarked instance is deleted); without it, neither is done.
   */
  coordination?: Pick<Coordination, 'get' | 'markedInstances'>;
  /** A finalizing claim untouched this long belongs to a dead sweep and is retried (default 10 min). */
  staleFinalizingMs?: number;
  /** Outbox rows younger than this are left to their own publish (default 5 s). */
  outboxMinAgeMs?: number;
  /** Takes examined per pass (default 100). */
  batch?: number;
  /** An erasure request untouched this long is taken over from its DELETE /me (default 60 s). */
  erasureMinAgeMs?: number;
}

export interface SweepCounts {
  stopped: number;
  finalized: number;
  degraded: number;
  failed: number;
  claimsReleased: number;
  claimsAbandoned: number;
  republished: number;
  prunedEvents: number;
  /** Days of outbox events dropped whole. */
  prunedEventPartitions: number;
  /** Past months of the manifest dropped, empty (its rows go only with their meeting). */
  prunedManifestPartitions: number;
  createdPartitions: number;
  prunedIdempotencyRecords: number;
  prunedWebhookAttempts: number;
  erasuresFinished: number;
  erasuresPending: number;
  purgedMeetings: number;
  deletedInstanceTopics: number;
  exportsBuilt: number;
  exportsAbandoned: number;
  exportsExpired: number;
}

const STALE_FINALIZING_MS = 10 * 60_000;
const ERASURE_MIN_AGE_MS = 60_000;

export const NO_COUNTS: SweepCounts = {
  stopped: 0,
  finalized: 0,
  degraded: 0,
  failed: 0,
  claimsReleased: 0,
  claimsAbandoned: 0,
  republished: 0,
  prunedEvents: 0,
  prunedEventPartitions: 0,
  prunedManifestPartitions: 0,
  createdPartitions: 0,
  prunedIdempotencyRecords: 0,
  prunedWebhookAttempts: 0,
  erasuresFinished: 0,
  erasuresPending: 0,
  purgedMeetings: 0,
  deletedInstanceTopics: 0,
  exportsBuilt: 0,
  exportsAbandoned: 0,
  exportsExpired: 0,
};

export async function runSweep(rt: SweepRuntime, opts: SweepOptions = {}): Promise<SweepCounts> {
  rt = { ...rt, db: rt.db.as({ service: 'sweep' }) }; // every user's rows, declared (issue 38)
  const counts: SweepCounts = { ...NO_COUNTS };
  const batch = opts.batch ?? 100;
  const minAgeMs = opts.erasureMinAgeMs ?? ERASURE_MIN_AGE_MS;
  const erasures = await runWorkflow(rt, SERVICE, resumeErasures, { minAgeMs, batch });
  counts.erasuresFinished = erasures.finished;
  counts.erasuresPending = erasures.pending;
  // Exports stream for as long as their audio takes: alongside the rest of the pass, not before it.
  const exporting = runWorkflow(rt, SERVICE, runAccountExports, {}).catch((err: unknown) => {
    rt.log.warn({ err: String(err) }, 'sweep: account exports failed; the next pass retries');
    return null;
  });
  counts.stopped = await stopOrphanedTakes(rt, opts.coordination, batch);

  // Claimed one at a time, right before the work, so a claim never ages while others are done.
  const finalize = async (rec: Recording) => {
    try {
      const message = await runWorkflow(rt, SERVICE, finalizeTake, rec);
      if (!message) return;
      const trace = traceIdOf(rec.trace_context);
      rt.log.info(
        {
          meeting_id: rec.meeting_id,
          audio_version: rec.audio_version,
          is_degraded: message.is_degraded,
          ...(trace && { trace_id: trace }),
        },
        'take finalized',
      );
      counts.finalized++;
      if (message.is_degraded) counts.degraded++;
    } catch (err) {
      counts.failed++;
      rt.log.warn(
        { err: String(err), meeting_id: rec.meeting_id, audio_version: rec.audio_version },
        'sweep: finalize failed; the next pass retries',
      );
      await runUseCase(rt, SERVICE, releaseFinalizeClaim, rec).catch(() => undefined);
    }
  };
  const staleMs = opts.staleFinalizingMs ?? STALE_FINALIZING_MS;
  for (const rec of await runUseCase(rt, SERVICE, reclaimStaleFinalizing, { staleMs })) await finalize(rec);
  for (const take of await dueTakes(rt.db, batch)) {
    const key = { meetingId: take.meeting_id, audioVersion: take.audio_version };
    const rec = await runUseCase(rt, SERVICE, claimTakeToFinalize, key);
    if (rec) await finalize(rec);
  }

  const claims = await runWorkflow(rt, SERVICE, releaseExpiredClaims, { limit: batch });
  counts.claimsReleased = claims.released;
  counts.claimsAbandoned = claims.abandoned;
  counts.republished = await rt.events.republishPending(opts.outboxMinAgeMs);
  for (const table of PARTITIONED_TABLES) counts.createdPartitions += (await ensurePartitions(rt.db, table)).length;
  const pruned = await pruneExpired(rt.db, rt.config.EVENT_RETENTION_HOURS);
  counts.prunedEvents = pruned.events;
  counts.prunedEventPartitions = pruned.eventPartitions;
  counts.prunedManifestPartitions = pruned.manifestPartitions;
  counts.prunedIdempotencyRecords = pruned.idempotencyRecords;
  counts.prunedWebhookAttempts = pruned.webhookAttempts;
  const afterDays = rt.config.MEETING_PURGE_AFTER_DAYS;
  counts.purgedMeetings = await runWorkflow(rt, SERVICE, purgeDeletedMeetings, { afterDays });
  if (opts.coordination)
    counts.deletedInstanceTopics = await deleteDeadInstanceTopics(rt, instanceTopicReads(rt, opts.coordination));
  const exports = await exporting;
  counts.exportsBuilt = exports?.built ?? 0;
  counts.exportsAbandoned = exports?.abandoned ?? 0;
  counts.exportsExpired = exports?.expired ?? 0;
  return counts;
}

/**
 * The owner of an open take touches its updated_at every OWNER_HEARTBEAT_SECONDS (and holds
 * its Firestore lease); a graceful shutdown releases it the same way. A take untouched for
 * OWNER_STALE_SECONDS + RECORDING_DISCONNECT_GRACE_SECONDS, whose lease nobody holds, lost its
 * owner and was not resumed within the grace: it is stopped with reason connection_closed.
 */
async function stopOrphanedTakes(
  rt: SweepRuntime,
  leases: Pick<Coordination, 'get'> | undefined,
  batch: number,
): Promise<number> {
  const idleSeconds = OWNER_STALE_SECONDS + rt.config.RECORDING_DISCONNECT_GRACE_SECONDS;
  const idle = await idleTakes(rt.db, idleSeconds, batch);
  let stopped = 0;
  for (const take of idle) {
    if (leases && (await leases.get(recordingLeaseKey(take.meeting_id, take.audio_version)))) continue;
    const input = {
      meetingId: take.meeting_id,
      audioVersion: take.audio_version,
      idleSeconds,
      gapUploadDeadlineSeconds: rt.config.RECORDING_GAP_UPLOAD_DEADLINE_SECONDS,
    };
    if (await runUseCase(rt, SERVICE, stopOrphanedTake, input)) stopped++;
  }
  return stopped;
}

/** The slice of a functions-framework (Express) request/response the handler uses. */
interface SweepRequest {
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}
interface SweepResponse {
  status(code: number): SweepResponse;
  json(body: unknown): void;
}

const MAX_PERIOD_SECONDS = 3600;

/** The HTTP edges' one mapper (lib/errors/problem.ts) shapes the sweep's errors too. */
function sendProblem(res: SweepResponse, err: DomainError): void {
  const { problem } = toProblem(err);
  res.status(problem.status).json(problem);
}

/**
 * The functions-framework handler. A body `{"period_seconds": n}` (what Cloud Scheduler sends,
 * since it fires at most once a minute) runs a pass at once and then every
 * RECORDING_GAP_SWEEP_INTERVAL_SECONDS until the period is over.
 */
export function sweepHandler(rt: SweepRuntime, opts: SweepOptions = {}) {
  const local = rt.config.APP_ENV === 'development' || rt.config.APP_ENV === 'test';
  return async (req: SweepRequest, res: SweepResponse): Promise<void> => {
    if (local) {
      const header = req.headers.authorization;
      const token = bearerToken(Array.isArray(header) ? header[0] : header);
      if (!token || !safeEqual(token, rt.config.SERVICE_AUTH_TOKEN)) {
        sendProblem(res, new DomainError('unauthorized', 'service token required'));
        return;
      }
    }
    const requested = Number((req.body as { period_seconds?: unknown } | undefined)?.period_seconds ?? 0);
    const periodMs = Math.min(MAX_PERIOD_SECONDS, Number.isFinite(requested) && requested > 0 ? requested : 0) * 1000;
    const intervalMs = rt.config.RECORDING_GAP_SWEEP_INTERVAL_SECONDS * 1000;
    const total: SweepCounts & { passes: number } = { passes: 0, ...NO_COUNTS };
    const started = Date.now();
    // A server span per pass (the http instrumentation makes none in the functions), continuing the caller's trace.
    const header = (name: string) => [req.headers[name]].flat()[0];
    const incoming = { traceparent: header('traceparent'), tracestate: header('tracestate') };
    try {
      for (;;) {
        const counts = await withIncomingSpan('sweep pass', incoming, {}, () => runSweep(rt, opts));
        total.passes++;
        for (const k of Object.keys(counts) as (keyof SweepCounts)[]) total[k] += counts[k];
        const next = started + total.passes * intervalMs;
        if (next - started >= periodMs) break;
        await sleep(Math.max(0, next - Date.now()));
      }
      res.status(200).json(total);
    } catch (err) {
      rt.log.error({ err: String(err) }, 'sweep failed');
      sendProblem(res, new DomainError('internal', 'sweep failed; the next run retries'));
    }
  };
}
