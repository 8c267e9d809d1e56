// One take owned by this instance: frames → in-memory buffer → one object + one manifest row per
// RECORDING_SEGMENT_TARGET_MS of contiguous frames → progress events with the durable contiguous
// sequence; audio forwarded to the ML service. When and how the take ends (disconnect grace,
// duration warning and ceiling, the stop sequence) is recorder-stop.ts. Nothing the recorder was
// given is dropped while it owns the take: frame writes are retried with backoff, never given up.
import type { Coordination } from '@mi/lib/adapters/coordination';
import { progressEvent, type EventBody } from '@mi/lib/events/catalogue';
import { mlAuthorization } from '@mi/lib/adapters/ml-credential';
import { instruments } from '@mi/lib/telemetry/metrics';
import type { StoredEvent } from '@mi/lib/events/outbox';
import type { OutgoingMessage } from './server-messages';
import { coverageOfSet, MAX_MISSING_RANGES, RangeSet } from '@mi/lib/domain/coverage';
import { NO_END, type ManifestRow } from '@mi/lib/repositories/manifest';
import { recordEvent } from '@mi/lib/repositories/recording-history';
import {
  pcmFrameBytes,
  recordingLeaseKey,
  releaseOwner,
  type Encoding,
  type StopReason,
} from '@mi/lib/repositories/recordings';
import type { Runtime } from '@mi/lib/adapters/runtime';
import { FrameBuffer, type Run } from './frames';
import { MlStream, type MlHealth } from './ml-client';
import { FRAME_MS, type ErrorCode } from './protocol';
import { prepareRuns, type SegmentCommitter } from './group-commit';
import { TakeEnd, whyLost } from './recorder-stop';
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
  /** The take's ML session (none without a transcription). */
  readonly ml: MlStream | null = null;
  private readonly pump: StoragePump;
  /** The grace, duration and stop of the take (recorder-stop.ts). */
  private readonly end: TakeEnd;
  /** The progress cadence: until the recorder is done. */
  private readonly intervals: NodeJS.Timeout[] = [];
  private readonly targetFrames: number;
  private readonly ceiling: number;
  /** Every frame stored or waiting to be: what the hole bound counts. */
  private readonly received: RangeSet;
  /** Runs we stored that no progress event covered yet: their last sequence and first arrival (ack latency). */
  private unacked: { end: number; at: number }[] = [];
  private counted = true;

  constructor(
    readonly host: RecorderHost,
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
        authorization: mlAuthorization(c),
        startTimeoutMs: c.RECORDING_ML_START_TIMEOUT_SECONDS * 1000,
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
    this.end = new TakeEnd(this);
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
    this.end.minGraceSeconds = minGraceSeconds;
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
    return this.end.stop(reason);
  }

  scheduleGrace(requestedSeconds: number): void {
    this.end.scheduleGrace(requestedSeconds, () => this.host.graceExpired(this));
  }

  get gracePending(): boolean {
    return this.end.gracePending;
  }

  cancelGrace(reason: string): void {
    this.end.cancelGrace(reason);
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
  halt(): void {
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

  /** The progress event of what is durable now (the stop commits it as the take's last). */
  progressNow(): EventBody {
    return this.progressBody(this.frames.durable, this.bytesStored);
  }

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
    const body = this.progressNow();
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

  /** The lease or the row (owner_instance) now names another instance, or the take is not open. */
  async ownershipLost(why: string): Promise<void> {
    if (this.state !== 'recording') return;
    this.note('lease_lost', { instance: this.host.instanceId, why });
    await this.letGo(await whyLost(this));
  }

  private clearTimers(): void {
    this.end.clearTimers();
    for (const t of this.intervals) clearInterval(t);
    this.intervals.length = 0;
    this.pump.clearTimer();
  }
}
