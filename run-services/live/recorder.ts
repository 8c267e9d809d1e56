// One take owned by this instance: frames → in-memory buffer → one object + one manifest row per
// RECORDING_SEGMENT_TARGET_MS of contiguous frames → progress events with the durable contiguous
// sequence; audio forwarded to the ML service; lease heartbeat; max duration; the stop sequence
// (settle → flush → bounded ML drain → stopped). Nothing the recorder was given is dropped while
// it owns the take: frame writes are retried with backoff, never given up (the stop's last step
// retries for about 80 s, then leaves a take stuck in stopping to the sweep).
import type { Coordination } from '@mi/lib/adapters/coordination';
import { retry, sleep } from '@mi/lib/async';
import { progressEvent, type EventBody } from '@mi/lib/events/catalogue';
import { instruments } from '@mi/lib/telemetry/metrics';
import type { StoredEvent } from '@mi/lib/events/outbox';
import { SERVICE } from '@mi/lib/domain/actor';
import { beginStop, completeStop } from '@mi/lib/use-cases/recording';
import { traceIdOf } from '@mi/lib/telemetry/trace-context';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import type { OutgoingMessage } from './server-messages';
import { coverageOfSet, MAX_MISSING_RANGES, RangeSet } from '@mi/lib/domain/coverage';
import { NO_END, type ManifestRow } from '@mi/lib/repositories/manifest';
import { recordEvent } from '@mi/lib/repositories/recording-history';
import {
  getRecording,
  pcmFrameBytes,
  recordingLeaseKey,
  releaseOwner,
  type Encoding,
  type StopReason,
} from '@mi/lib/repositories/recordings';
import type { Runtime } from '@mi/lib/adapters/runtime';
import { FrameBuffer, type Run } from './frames';
import { MlStream, type DrainResult, type MlHealth } from './ml-client';
import { FRAME_MS, type ErrorCode } from './protocol';
import { prepareRuns, type SegmentCommitter } from './segments';
import { StoragePump, type PumpHost } from './storage-pump';

export interface Take {
  meetingId: string;
  audioVersion: number;
  userId: string;
  transcriptionId: string | null;
  encoding: Encoding;
  sampleRate: number;
  maxDurationSeconds: number;
  startedAt: Date;
  /** The client's trace context of the start: the take's ML calls continue it. */
  trace: Record<string, string> | null;
}

/** The connection a recorder reports to. */
export interface RecorderClient {
  readonly id: string;
  send(message: OutgoingMessage): boolean;
  /** The connection no longer holds this recorder. */
  released(r: Recorder): void;
}

export interface RecorderHost {
  rt: Runtime;
  coordination: Coordination;
  instanceId: string;
  mlUrl: string;
  leaseTtlMs: number;
  committer: SegmentCommitter;
  /** Deliver committed events to this instance's connections now and publish them. */
  dispatch(events: StoredEvent[]): void;
  /** The grace period ran out: stop unless the user is back. */
  graceExpired(r: Recorder): void;
  /** The recorder is done on this instance. */
  closed(r: Recorder): void;
}

export type RecorderState = 'recording' | 'settling' | 'finishing' | 'done';

/** Frames waiting for storage beyond this are refused (buffer_full): ~2 min of 16 kHz PCM. */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;
const BACKOFF_MS = [100, 200, 500, 1_000, 2_000, 5_000];
const DURATION_WARNING_LEAD_MS = 60_000;
const LET_GO_FLUSH_MS = 5_000;
/** Ticks of the progress cadence per RECORDING_PROGRESS_INTERVAL_SECONDS. */
const PROGRESS_TICKS = 2;

export class Recorder implements PumpHost {
  readonly key: string;
  readonly createdAt = Date.now();
  state: RecorderState = 'recording';
  client: RecorderClient | null = null;
  private readonly frames: FrameBuffer;
  /** Bytes of the rows this recorder knows of (the frames of frames.durable). */
  private bytesStored: number;
  private lastProgress: { frames: number };
  progressRequested = false;
  /** Ticks of the progress cadence since the last progress event (or the last request for one). */
  private ticksSinceProgress = 0;
  private ml: MlStream | null = null;
  private readonly pump: StoragePump;
  private graceTimer: NodeJS.Timeout | null = null;
  /** The least grace of the current detachment (a client told to reconnect gets time to come back). */
  private minGraceSeconds = 0;
  private stopping: Promise<void> | null = null;
  /** The progress cadence: until the recorder is done. */
  private readonly intervals: NodeJS.Timeout[] = [];
  /** Duration warning and ceiling: until the stop begins. */
  private readonly durationTimers: NodeJS.Timeout[] = [];
  private readonly targetFrames: number;
  private readonly ceiling: number;
  /** Every frame stored or waiting to be: what the hole bound counts. */
  private readonly received: RangeSet;
  /** Runs we stored that no progress event covered yet: their last sequence and first arrival (ack latency). */
  private unacked: { end: number; at: number }[] = [];
  private counted = true;

  constructor(
    private readonly host: RecorderHost,
    readonly take: Take,
    stored: ManifestRow[] = [],
  ) {
    this.key = recordingLeaseKey(take.meetingId, take.audioVersion);
    const c = host.rt.config;
    this.targetFrames = Math.max(1, Math.round(c.RECORDING_SEGMENT_TARGET_MS / FRAME_MS));
    // The take's ceiling: sequences 0 .. ceiling − 1 (decisions.md section 6), during the settle time too.
    this.ceiling = Math.ceil((take.maxDurationSeconds * 1000) / FRAME_MS);
    this.frames = new FrameBuffer(RangeSet.of(stored.map((r) => [r.start_sequence, r.end_sequence] as const)));
    this.received = this.frames.durable.clone();
    this.bytesStored = stored.reduce((n, r) => n + r.byte_count, 0);
    this.lastProgress = { frames: this.frames.durable.size };
    this.pump = new StoragePump(this.frames, this.targetFrames, c.RECORDING_SEGMENT_TARGET_MS, this);
    instruments().takesOpen.add(1);

    if (take.transcriptionId) {
      this.ml = new MlStream({
        baseUrl: host.mlUrl,
        token: c.SERVICE_AUTH_TOKEN,
        log: host.rt.log,
        trace: take.trace ?? {},
        forwardEveryMs: c.LIVE_ML_FORWARD_MS,
        init: {
          meeting_id: take.meetingId,
          transcription_id: take.transcriptionId,
          audio_version: take.audioVersion,
          encoding: take.encoding,
          sample_rate: take.sampleRate,
          start_sequence: this.frames.durable.contiguous + 1,
        },
        onHealth: (h) => this.health(h),
      });
    }
    // Two ticks per interval: the second tick after the last progress asks for one, so the gap
    // never exceeds the interval (comparing clocks at one tick per interval skipped every other).
    this.intervals.push(
      setInterval(() => this.progressTick(), (c.RECORDING_PROGRESS_INTERVAL_SECONDS * 1000) / PROGRESS_TICKS),
    );
    this.scheduleDuration();
  }

  get coverage() {
    return coverageOfSet(this.frames.durable, this.bytesStored);
  }

  /** Frames waiting for storage (for tests and the shutdown log). */
  get pendingFrames(): number {
    return this.frames.size;
  }

  attach(client: RecorderClient): void {
    if (this.client && this.client !== client) {
      // Another connection (a second tab) resumed the take on this instance.
      this.client.send({
        type: 'RecordingReleased',
        meeting_id: this.take.meetingId,
        audio_version: this.take.audioVersion,
        reason: 'resumed_elsewhere',
      });
      this.client.released(this);
    }
    this.client = client;
    this.cancelGrace('resumed');
  }

  /**
   * The connection closed: what it delivered is written now, not when the take continues. A
   * client the server told to reconnect gets at least `minGraceSeconds` before a disconnect stop,
   * whichever path (close, heartbeat, presence notice) starts the grace.
   */
  detach(client: RecorderClient, minGraceSeconds = 0): void {
    if (this.client !== client) return;
    this.client = null;
    this.minGraceSeconds = minGraceSeconds;
    this.pump.kick();
  }

  /** One binary message ([u64 seq][bytes]); null when taken (or a harmless duplicate). */
  frame(seq: number, message: Buffer): ErrorCode | null {
    instruments().framesReceived.add(1);
    if (this.state === 'finishing' || this.state === 'done') return 'recording_stopping';
    if (seq >= this.ceiling) return 'sequence_out_of_range';
    const audio = message.subarray(8);
    // pcm_s16le frames are exactly 100 ms of samples; any other size would shift what follows.
    if (this.take.encoding === 'pcm_s16le' ? audio.length !== pcmFrameBytes(this.take.sampleRate) : audio.length === 0)
      return 'bad_frame';
    if (this.frames.bytes >= MAX_PENDING_BYTES) return 'buffer_full';
    // A frame past the end with a gap, or inside a hole away from its edges (splitting it), opens
    // a hole: bounded, so sparse frames cannot make unbounded work.
    if (this.received.holesAfterAdding(seq) > Math.max(MAX_MISSING_RANGES, this.received.holes)) return 'too_many_gaps';
    if (!this.frames.add(seq, audio, Date.now())) return null;
    this.received.add(seq, seq);
    this.ml?.send(message, seq);
    this.pump.added();
    return null;
  }

  /** The stop sequence; resolves once RecordingStopped went out (or the take was lost). */
  stop(reason: StopReason): Promise<void> {
    this.stopping ??= this.runStop(reason).catch((err) => {
      this.host.rt.log.error({ err, take: this.key }, 'stop failed');
      // The database failed past every retry: the frames stay held, and a stop sent again goes
      // on from the step that failed (the client is told, never left waiting in silence).
      this.stopping = null;
      this.client?.send({
        type: 'error',
        code: 'unavailable',
        message: `the take could not be stopped (${(err as Error).message}); send StopRecordingCommand again`,
        ref: 'StopRecordingCommand',
      });
    });
    return this.stopping;
  }

  scheduleGrace(requestedSeconds: number): void {
    if (this.state !== 'recording' || this.client || this.graceTimer) return;
    const seconds = Math.max(requestedSeconds, this.minGraceSeconds);
    this.note('disconnect_grace_started', { grace_seconds: seconds });
    if (seconds <= 0) return void this.stop('connection_closed');
    this.graceTimer = setTimeout(() => {
      this.graceTimer = null;
      this.host.graceExpired(this);
    }, seconds * 1000);
  }

  get gracePending(): boolean {
    return this.graceTimer !== null;
  }

  cancelGrace(reason: string): void {
    if (!this.graceTimer) return;
    clearTimeout(this.graceTimer);
    this.graceTimer = null;
    this.note('disconnect_grace_cancelled', { reason });
  }

  /** Writes everything waiting; resolves when nothing waits or after timeoutMs. */
  flushAll(timeoutMs = Infinity): Promise<void> {
    return this.pump.flushAll(timeoutMs);
  }

  /**
   * The take goes on elsewhere (resumed on another instance) or this instance stops: write what
   * we hold, stop forwarding, tell the client, and forget the take.
   */
  async letGo(reason: 'resumed_elsewhere' | 'shutdown' | 'not_recording', flushMs = LET_GO_FLUSH_MS): Promise<void> {
    if (this.state === 'done') return;
    this.state = 'done';
    this.clearTimers();
    await this.flushAll(flushMs);
    this.ml?.close();
    const unflushed = this.frames.size;
    this.halt();
    if (this.client) {
      this.client.send({
        type: 'RecordingReleased',
        meeting_id: this.take.meetingId,
        audio_version: this.take.audioVersion,
        reason,
      });
      this.client.released(this);
      this.client = null;
    }
    this.note('recording_released', { instance: this.host.instanceId, reason, frames_unflushed: unflushed });
    if (reason === 'shutdown') {
      await Promise.allSettled([
        releaseOwner(this.host.rt.db, this.take.meetingId, this.take.audioVersion, this.host.instanceId),
        this.host.coordination.release(this.key, this.host.instanceId),
      ]);
    }
    this.host.closed(this);
  }

  /** Stops timers, writes and forwarding; nothing is written after this. */
  private halt(): void {
    if (this.counted) instruments().takesOpen.add(-1);
    this.counted = false;
    this.pump.halt();
    this.state = 'done';
    this.clearTimers();
    this.ml?.close();
  }

  // --- storage -------------------------------------------------------------------------------

  get detached(): boolean {
    return this.client === null;
  }

  storageRetrying(attempt: number, err: Error, report: boolean): void {
    this.host.rt.log.warn({ err: err.message, take: this.key, failures: attempt }, 'segment write failed; retrying');
    if (report) this.health({ source: 'core', code: 'storage_retrying', detail: { attempt, error: err.message } });
  }

  storageRecovered(attempts: number): void {
    this.health({ source: 'core', code: 'storage_recovered', detail: { attempts } });
  }

  /** Stores runs: their objects, then their rows through the instance's group commit. */
  async store(runs: Run[]): Promise<void> {
    const { rt } = this.host;
    // The stream's tail (it paused, ended or lost its connection): a short run that leaves nothing
    // waiting is reported at once, not at the next interval.
    const tail =
      runs.reduce((n, r) => n + r.frames.length, 0) === this.frames.size &&
      runs.some((r) => r.frames.length < this.targetFrames);
    const prepared = await prepareRuns(rt.store, this.take, runs);
    const outcome = await this.host.committer.commit({
      take: this.take,
      userId: this.take.userId,
      unknown: [...this.frames.durable.missing(), [this.frames.durable.max + 1, NO_END]],
      runs: prepared,
      progress: (rows) => this.progressFor(rows, tail),
    });
    if (outcome.kind === 'closed') return this.closedUnderneath(runs.map((r) => [r.start, r.end]));
    if (outcome.kind === 'progress') return; // not asked for (runs were given)
    instruments().framesStored.add(runs.reduce((n, r) => n + r.frames.length, 0));
    for (const r of runs) this.unacked.push({ end: r.end, at: r.frames.reduce((m, f) => Math.min(m, f.at), Infinity) });
    for (const r of outcome.rows) this.learn(r);
    if (outcome.events.length) this.progressSent(outcome.events);
    if (this.state === 'recording' && (outcome.state !== 'recording' || outcome.owner !== this.host.instanceId)) {
      void this.letGo(outcome.state === 'recording' ? 'resumed_elsewhere' : 'not_recording');
    }
  }

  /** A row new to us (a commit returns only those): its frames are stored, by us or another writer. */
  private learn(r: Pick<ManifestRow, 'start_sequence' | 'end_sequence' | 'byte_count'>): void {
    this.frames.markDurable(r.start_sequence, r.end_sequence);
    this.received.add(r.start_sequence, r.end_sequence);
    this.bytesStored += r.byte_count;
  }

  // --- progress and health -------------------------------------------------------------------

  private progressBody(durable: RangeSet, bytes: number): EventBody {
    const cov = coverageOfSet(durable, bytes);
    return progressEvent({
      meeting_id: this.take.meetingId,
      audio_version: this.take.audioVersion,
      highest_contiguous_sequence: cov.highest_contiguous_sequence,
      frames_stored: cov.frames_stored,
      bytes_stored: cov.bytes_stored,
    });
  }

  /**
   * The progress events due once `rows` (the rows new to us, ours included) are stored: one
   * per RECORDING_PROGRESS_EVERY_FRAMES frames they add, each with the coverage at that point (a
   * backlog written in one go thins out no event), or one when an interval's event is due or
   * the rows end the stream's tail.
   */
  private progressFor(rows: ManifestRow[], tail: boolean): EventBody[] {
    const every = this.host.rt.config.RECORDING_PROGRESS_EVERY_FRAMES;
    const view = this.frames.durable.clone();
    let bytes = this.bytesStored;
    let reported = this.lastProgress.frames;
    const bodies: EventBody[] = [];
    const fresh = [...rows].sort((a, b) => a.start_sequence - b.start_sequence);
    for (const [i, r] of fresh.entries()) {
      view.add(r.start_sequence, r.end_sequence);
      bytes += r.byte_count;
      const last = i === fresh.length - 1;
      if (view.size - reported >= every || (last && (this.progressRequested || (tail && view.size > reported)))) {
        bodies.push(this.progressBody(view, bytes));
        reported = view.size;
      }
    }
    return bodies;
  }

  /** The progress cadence's tick (PROGRESS_TICKS per interval; tests drive it by hand). */
  progressTick(): void {
    if (++this.ticksSinceProgress >= PROGRESS_TICKS) this.requestProgress();
  }

  private requestProgress(): void {
    this.ticksSinceProgress = 0;
    this.progressRequested = true;
    this.pump.kick();
  }

  async emitProgress(): Promise<void> {
    const body = this.progressBody(this.frames.durable, this.bytesStored);
    const outcome = await this.host.committer.commit({
      take: this.take,
      userId: this.take.userId,
      unknown: [],
      runs: [],
      progress: () => [body],
    });
    if (outcome.kind === 'closed') return this.closedUnderneath([]);
    if (outcome.kind === 'progress') this.progressSent(outcome.events);
  }

  /** Finalized or deleted (account erasure) underneath us: nothing can be added; let go at once. */
  private closedUnderneath(runs: [number, number][]): void {
    // Frames still held were never acknowledged.
    this.host.rt.log.error(
      { take: this.key, runs },
      'take is finalized or gone (its account was erased); frames cannot be stored',
    );
    this.frames.markDurable(0, Number.MAX_SAFE_INTEGER);
    void this.letGo('not_recording', 0);
  }

  /** Events already dispatched (the committer dispatches a whole batch's at once). */
  private progressSent(events: StoredEvent[]): void {
    this.progressRequested = false;
    this.ticksSinceProgress = 0;
    const last = events.at(-1)!.body as { frames_stored: number; highest_contiguous_sequence: number };
    this.lastProgress = { frames: last.frames_stored };
    // A frame is acknowledged once a progress event's contiguous coverage reaches it.
    const now = Date.now();
    this.unacked = this.unacked.filter((u) =>
      u.end <= last.highest_contiguous_sequence ? (instruments().ackLatency.record(now - u.at), false) : true,
    );
  }

  private health(h: MlHealth): void {
    if (this.pump.halted) return;
    this.client?.send({
      type: 'RecordingHealth',
      meeting_id: this.take.meetingId,
      audio_version: this.take.audioVersion,
      ...h,
    });
    this.note(h.code, { source: h.source, ...h.detail });
  }

  /** Appends to recording_event_history; a failure only costs the diagnostic. */
  note(eventType: string, payload: Record<string, unknown>): void {
    recordEvent(this.host.rt.db, this.take.meetingId, eventType, {
      audio_version: this.take.audioVersion,
      ...payload,
    }).catch((err) =>
      this.host.rt.log.warn({ err: (err as Error).message, eventType }, 'could not record a recording event'),
    );
  }

  // --- lifecycle -----------------------------------------------------------------------------

  private async runStop(reason: StopReason): Promise<void> {
    const { rt, instanceId } = this.host;
    const c = rt.config;
    const { meetingId, audioVersion } = this.take;
    // Committed events reach this instance's connections first, then Pub/Sub.
    const uow = { db: rt.db, events: { publish: async (events: StoredEvent[]) => this.host.dispatch(events) } };
    if (this.state === 'recording') {
      // Settling before the row says stopping: a segment commit that meets our own stop is no
      // sign that the take was lost (store() lets go only of a take still 'recording' here).
      this.state = 'settling';
      const ok = await this.retried('begin', () =>
        runUseCase(uow, SERVICE, beginStop, { meetingId, audioVersion, reason, owner: instanceId }),
      ).catch((err) => {
        this.state = 'recording';
        throw err;
      });
      if (!ok) return this.letGo(await this.whyLost());
      this.clearDurationAndGrace();
      await sleep(c.RECORDING_STOP_SETTLE_MS);
    }
    // A stop sent again after a failed one starts here (finishing); a take let go meanwhile ends.
    if (this.state !== 'settling' && this.state !== 'finishing') return;
    this.state = 'finishing';
    await this.flushAll();
    const drain: DrainResult = this.ml
      ? await this.ml.drain(c.RECORDING_ML_DRAIN_TIMEOUT_SECONDS * 1000)
      : { drained: false, error: 'no ML session' };
    this.note(drain.timed_out ? 'ml_drain_timeout' : 'ml_drained', {
      ...drain,
      timeout_seconds: c.RECORDING_ML_DRAIN_TIMEOUT_SECONDS,
    });

    const result = await this.retried('complete', () =>
      runUseCase(uow, SERVICE, completeStop, {
        meetingId,
        audioVersion,
        userId: this.take.userId,
        gapUploadDeadlineSeconds: c.RECORDING_GAP_UPLOAD_DEADLINE_SECONDS,
        history: { ml_drained: drain.drained },
        events: [this.progressBody(this.frames.durable, this.bytesStored)],
      }),
    );
    if (!result) {
      await this.letGo('not_recording', 0);
      await this.host.coordination.release(this.key, instanceId).catch(() => undefined);
      return;
    }
    this.state = 'done';
    this.halt();
    const trace = this.take.trace && traceIdOf(this.take.trace);
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
    if (this.client) {
      this.client.send({
        type: 'RecordingStopped',
        meeting_id: meetingId,
        audio_version: audioVersion,
        reason,
        highest_contiguous_sequence: result.coverage.highest_contiguous_sequence,
        missing_ranges: result.coverage.missing_ranges,
        gap_upload_deadline: result.gap_upload_deadline,
      });
      this.client.released(this);
      this.client = null;
    }
    await this.host.coordination.release(this.key, instanceId).catch(() => undefined);
    this.host.closed(this);
  }

  /** The lease or the row (owner_instance) now names another instance, or the take is not open. */
  async ownershipLost(why: string): Promise<void> {
    if (this.state !== 'recording') return;
    this.note('lease_lost', { instance: this.host.instanceId, why });
    await this.letGo(await this.whyLost());
  }

  /** Another instance resumed the take, or it is no longer recording at all. */
  private async whyLost(): Promise<'resumed_elsewhere' | 'not_recording'> {
    const rec = await getRecording(this.host.rt.db, this.take.meetingId, this.take.audioVersion).catch(() => null);
    return rec?.state === 'recording' && rec.owner_instance !== this.host.instanceId
      ? 'resumed_elsewhere'
      : 'not_recording';
  }

  private scheduleDuration(): void {
    const endAt = this.take.startedAt.getTime() + this.take.maxDurationSeconds * 1000;
    const lead = Math.min(DURATION_WARNING_LEAD_MS, (this.take.maxDurationSeconds * 1000) / 10);
    const now = Date.now();
    if (endAt - lead > now) {
      this.durationTimers.push(
        setTimeout(
          () => {
            const seconds = Math.max(0, Math.round((endAt - Date.now()) / 1000));
            const warning = {
              meeting_id: this.take.meetingId,
              audio_version: this.take.audioVersion,
              seconds_remaining: seconds,
              max_duration_seconds: this.take.maxDurationSeconds,
            };
            this.client?.send({ type: 'RecordingDurationWarning', ...warning });
            this.note('duration_warning', warning);
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
        this.host.rt.log.warn(
          { err: (err as Error).message, take: this.key, step, failures },
          'stop step failed; retrying',
        ),
    });
  }

  private clearDurationAndGrace(): void {
    for (const t of this.durationTimers) clearTimeout(t);
    this.durationTimers.length = 0;
    if (this.graceTimer) clearTimeout(this.graceTimer), (this.graceTimer = null);
  }

  private clearTimers(): void {
    this.clearDurationAndGrace();
    for (const t of this.intervals) clearInterval(t);
    this.intervals.length = 0;
    this.pump.clearTimer();
  }
}
