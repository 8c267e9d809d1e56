// When and how a take ends on this instance: the triggers (the disconnect grace, the duration
// warning and ceiling) and the stop sequence (settle → flush → bounded ML drain → stopped). The
// recorder (recorder.ts) owns frames, storage and progress; it hands its end to a TakeEnd. The
// stop's database steps are retried for about 80 s, then a take stuck in stopping is the sweep's.
import { retry, sleep } from '@mi/lib/async';
import { SERVICE } from '@mi/lib/domain/actor';
import type { StoredEvent } from '@mi/lib/events/outbox';
import { getRecording, type StopReason } from '@mi/lib/repositories/recordings';
import { traceIdOf } from '@mi/lib/telemetry/trace-context';
import { beginStop, completeStop } from '@mi/lib/use-cases/recording';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import type { DrainResult } from './ml-client';
import type { Recorder } from './recorder';

const BACKOFF_MS = [100, 200, 500, 1_000, 2_000, 5_000];
const DURATION_WARNING_LEAD_MS = 60_000;

export class TakeEnd {
  private graceTimer: NodeJS.Timeout | null = null;
  /** The least grace of the current detachment (a client told to reconnect gets time to come back). */
  minGraceSeconds = 0;
  private stopping: Promise<void> | null = null;
  /** Duration warning and ceiling: until the stop begins. */
  private readonly durationTimers: NodeJS.Timeout[] = [];

  constructor(private readonly r: Recorder) {
    this.scheduleDuration();
  }

  /** The stop sequence; resolves once RecordingStopped went out (or the take was lost). */
  stop(reason: StopReason): Promise<void> {
    this.stopping ??= this.run(reason).catch((err) => {
      this.r.host.rt.log.error({ err, take: this.r.key }, 'stop failed');
      // The database failed past every retry: the frames stay held, and a stop sent again goes
      // on from the step that failed (the client is told, never left waiting in silence).
      this.stopping = null;
      this.r.client?.send({
        type: 'error',
        code: 'unavailable',
        message: `the take could not be stopped (${(err as Error).message}); send StopRecordingCommand again`,
        ref: 'StopRecordingCommand',
      });
    });
    return this.stopping;
  }

  scheduleGrace(requestedSeconds: number, expired: () => void): void {
    if (this.r.state !== 'recording' || this.r.client || this.graceTimer) return;
    const seconds = Math.max(requestedSeconds, this.minGraceSeconds);
    this.r.note('disconnect_grace_started', { grace_seconds: seconds });
    if (seconds <= 0) return void this.stop('connection_closed');
    this.graceTimer = setTimeout(() => {
      this.graceTimer = null;
      expired();
    }, seconds * 1000);
  }

  get gracePending(): boolean {
    return this.graceTimer !== null;
  }

  cancelGrace(reason: string): void {
    if (!this.graceTimer) return;
    clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.r.note('disconnect_grace_cancelled', { reason });
  }

  /** Clears the grace and duration timers (the stop began, or the take is let go). */
  clearTimers(): void {
    for (const t of this.durationTimers) clearTimeout(t);
    this.durationTimers.length = 0;
    if (this.graceTimer) clearTimeout(this.graceTimer), (this.graceTimer = null);
  }

  private async run(reason: StopReason): Promise<void> {
    const r = this.r;
    const { rt, instanceId } = r.host;
    const c = rt.config;
    const { meetingId, audioVersion } = r.take;
    // Committed events reach this instance's connections first, then Pub/Sub.
    const uow = { db: rt.db, events: { publish: async (events: StoredEvent[]) => r.host.dispatch(events) } };
    if (r.state === 'recording') {
      // Settling before the row says stopping: a segment commit that meets our own stop is no
      // sign that the take was lost (store() lets go only of a take still 'recording' here).
      r.state = 'settling';
      const ok = await this.retried('begin', () =>
        runUseCase(uow, SERVICE, beginStop, { meetingId, audioVersion, reason, owner: instanceId }),
      ).catch((err) => {
        r.state = 'recording';
        throw err;
      });
      if (!ok) return r.letGo(await whyLost(r));
      this.clearTimers();
      await sleep(c.RECORDING_STOP_SETTLE_MS);
    }
    // A stop sent again after a failed one starts here (finishing); a take let go meanwhile ends.
    if (r.state !== 'settling' && r.state !== 'finishing') return;
    r.state = 'finishing';
    await r.flushAll();
    const drain: DrainResult = r.ml
      ? await r.ml.drain(c.RECORDING_ML_DRAIN_TIMEOUT_SECONDS * 1000)
      : { drained: false, error: 'no ML session' };
    r.note(drain.timed_out ? 'ml_drain_timeout' : 'ml_drained', {
      ...drain,
      timeout_seconds: c.RECORDING_ML_DRAIN_TIMEOUT_SECONDS,
    });

    const result = await this.retried('complete', () =>
      runUseCase(uow, SERVICE, completeStop, {
        meetingId,
        audioVersion,
        userId: r.take.userId,
        gapUploadDeadlineSeconds: c.RECORDING_GAP_UPLOAD_DEADLINE_SECONDS,
        history: { ml_drained: drain.drained },
        events: [r.progressNow()],
      }),
    );
    if (!result) {
      await r.letGo('not_recording', 0);
      await r.host.coordination.release(r.key, instanceId).catch(() => undefined);
      return;
    }
    r.state = 'done';
    r.halt();
    const trace = r.take.trace && traceIdOf(r.take.trace);
    rt.log.info(
      {
        meeting_id: meetingId,
        audio_version: audioVersion,
        reason,
        instance: instanceId,
        ...(trace && { trace_id: trace }),
        ...result.coverage,
      },
      'take stopped',
    );
    if (r.client) {
      r.client.send({
        type: 'RecordingStopped',
        meeting_id: meetingId,
        audio_version: audioVersion,
        reason,
        highest_contiguous_sequence: result.coverage.highest_contiguous_sequence,
        missing_ranges: result.coverage.missing_ranges,
        gap_upload_deadline: result.gap_upload_deadline,
      });
      r.client.released(r);
      r.client = null;
    }
    await r.host.coordination.release(r.key, instanceId).catch(() => undefined);
    r.host.closed(r);
  }

  private scheduleDuration(): void {
    const { take } = this.r;
    const endAt = take.startedAt.getTime() + take.maxDurationSeconds * 1000;
    const lead = Math.min(DURATION_WARNING_LEAD_MS, (take.maxDurationSeconds * 1000) / 10);
    const now = Date.now();
    if (endAt - lead > now) {
      this.durationTimers.push(
        setTimeout(
          () => {
            const seconds = Math.max(0, Math.round((endAt - Date.now()) / 1000));
            const warning = {
              meeting_id: take.meetingId,
              audio_version: take.audioVersion,
              seconds_remaining: seconds,
              max_duration_seconds: take.maxDurationSeconds,
            };
            this.r.client?.send({ type: 'RecordingDurationWarning', ...warning });
            this.r.note('duration_warning', warning);
          },
          endAt - lead - now,
        ),
      );
    }
    this.durationTimers.push(setTimeout(() => void this.stop('max_duration'), Math.max(0, endAt - now)));
  }

  /** Retries a database step of the stop with backoff, 20 times (about 80 s): a stop must complete if it can. */
  private retried<T>(step: string, fn: () => Promise<T>): Promise<T> {
    return retry(fn, {
      steps: BACKOFF_MS,
      attempts: 21,
      onRetry: (err, failures) =>
        this.r.host.rt.log.warn(
          { err: (err as Error).message, take: this.r.key, step, failures },
          'stop step failed; retrying',
        ),
    });
  }
}

/** Another instance resumed the take, or it is no longer recording at all. */
export async function whyLost(r: Pick<Recorder, 'host' | 'take'>): Promise<'resumed_elsewhere' | 'not_recording'> {
  const rec = await getRecording(r.host.rt.db, r.take.meetingId, r.take.audioVersion).catch(() => null);
  return rec?.state === 'recording' && rec.owner_instance !== r.host.instanceId ? 'resumed_elsewhere' : 'not_recording';
}
