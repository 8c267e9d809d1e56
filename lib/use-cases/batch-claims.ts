// The ML batch pass's claim on a finalized take is a lease (decisions.md section 8): the claim
// itself and its renewal are status changes (updateTranscription); here are the fence every other
// batch write passes when it carries its claim (ML-Claim), and the sweep's step that releases
// expired claims, offering the take again (`recording.finalized`, attempt n + 1) or giving it up.
import type { RecordingFinalized } from '../ml/contract';
import { listManifest, coverageOf } from '../repositories/manifest';
import { finalizedTake } from '../repositories/finalize';
import * as transcriptions from '../repositories/transcriptions';
import { takeAudioPath } from '../objects/take-objects';
import type { Recording } from '../repositories/recordings';
import { changed } from '../events/catalogue';
import { unofferedUploads, uploadOfTranscription } from '../repositories/audio';
import { offerUpload, uploadMessage } from './audio';
import { finalizedMessage, offerBatchPass, offerTake, type FinalizeDeps } from './recording';
import type { UseCase } from './use-case';
import type { Workflow } from './workflow';

/**
 * The use case, run only while `claim` (when given) is the current live claim of the
 * transcription or of one of the meeting's transcriptions: refused 409 invalid_state otherwise.
 * Writes without a claim run as before.
 */
export function fencedBy<I, O>(
  claim: string | undefined,
  scope: { transcriptionId: string } | { meetingId: string },
  useCase: UseCase<I, O>,
): UseCase<I, O> {
  if (claim === undefined) return useCase;
  return async (ctx, input) => {
    await transcriptions.assertCurrentClaim(ctx.tx, claim, scope);
    return useCase(ctx, input);
  };
}

interface ReleaseInput {
  id: string;
  leaseSeconds: number;
  maxAttempts: number;
  /** Publishes the take's (null: an upload's) message again; called inside the release's transaction (see below). */
  offer: (rec: Recording | null, message: RecordingFinalized) => Promise<void>;
}

/**
 * Ends one expired claim: back to transcribing with the take's `recording.finalized` published
 * again (attempt = expired claims + 1), or failed once ML_BATCH_MAX_ATTEMPTS claims expired. The
 * publish happens before the commit, with the row locked: a worker that receives the message and
 * claims at once waits for the commit and finds the take transcribing; a publish that fails rolls
 * the release back, for the next sweep to retry, so a released take is never left unoffered. A
 * transcription of no finalized take (created through the API) or of a deleted meeting goes back
 * to transcribing unoffered. An upload's transcription is offered again as a take's is.
 */
const releaseExpiredClaim: UseCase<ReleaseInput, 'released' | 'abandoned' | null> = async (ctx, input) => {
  const released = await transcriptions.releaseExpiredClaim(ctx.tx, input.id, input);
  if (!released) return null;
  ctx.emit(released.user_id, changed('transcription', 'updated', released.id, released.meeting_id));
  if (released.status === 'failed') return 'abandoned';
  const rec = released.meeting_deleted ? null : await finalizedTake(ctx.tx, released.id);
  if (rec) {
    const rows = await listManifest(ctx.tx, rec.meeting_id, rec.audio_version);
    const storagePath = rows.length ? takeAudioPath(rec) : null;
    const message = finalizedMessage(rec, storagePath, coverageOf(rows).missing_ranges, released.claim_expirations + 1);
    await input.offer(rec, message);
  }
  const upload = rec || released.meeting_deleted ? null : await uploadOfTranscription(ctx.tx, released.id);
  if (upload) {
    const attempt = released.claim_expirations + 1;
    await input.offer(null, uploadMessage(upload.meeting_id, released.id, upload.storage_path, attempt));
  }
  return 'released';
};

export interface ReleasedClaims {
  released: number;
  abandoned: number;
  /** Uploads offered by the sweep: their upload died between storing and offering. */
  uploadsOffered: number;
}

/** An upload's transcription still pending after this long was left by a request that died mid-way. */
const UNOFFERED_UPLOAD_SECONDS = 60;

/**
 * The sweep's step: every expired batch claim (up to `limit`) released, each in its own
 * transaction; then uploads left pending (their request died before the offer) are offered.
 */
export const releaseExpiredClaims: Workflow<
  { limit: number },
  ReleasedClaims,
  Pick<FinalizeDeps, 'db' | 'events' | 'store' | 'log' | 'bus'> & {
    config: Pick<FinalizeDeps['config'], 'PUBSUB_TOPIC_RECORDING_FINALIZED'> & {
      ML_BATCH_CLAIM_LEASE_SECONDS: number;
      ML_BATCH_MAX_ATTEMPTS: number;
    };
  }
> = async (ctx, { limit }) => {
  const { deps } = ctx;
  const leaseSeconds = deps.config.ML_BATCH_CLAIM_LEASE_SECONDS;
  const maxAttempts = deps.config.ML_BATCH_MAX_ATTEMPTS;
  const offer = (rec: Recording | null, message: RecordingFinalized) =>
    rec ? offerTake(deps, rec, message) : offerBatchPass(deps, message);
  const counts: ReleasedClaims = { released: 0, abandoned: 0, uploadsOffered: 0 };
  for (const id of await transcriptions.expiredClaims(deps.db, leaseSeconds, limit)) {
    try {
      const outcome = await ctx.run(releaseExpiredClaim, { id, leaseSeconds, maxAttempts, offer });
      if (outcome === 'released') counts.released++;
      if (outcome === 'abandoned') counts.abandoned++;
      if (outcome) deps.log.info({ transcription_id: id, outcome }, 'sweep: an expired batch claim was released');
    } catch (err) {
      // Rolled back (the publish failed): still expired, the next pass retries it.
      deps.log.warn({ err: String(err), transcription_id: id }, 'sweep: an expired batch claim was not released');
    }
  }
  for (const up of await unofferedUploads(deps.db, UNOFFERED_UPLOAD_SECONDS, limit)) {
    const message = uploadMessage(up.meeting_id, up.id, up.storage_path, 1);
    try {
      if (await ctx.run(offerUpload, { message, publish: () => offerBatchPass(deps, message) }))
        counts.uploadsOffered++;
    } catch (err) {
      deps.log.warn({ err: String(err), transcription_id: up.id }, 'sweep: an unoffered upload was not offered');
    }
  }
  return counts;
};
