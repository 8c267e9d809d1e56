// One streaming session of the fake ML service: a bounded frame queue (excess dropped and
// counted), silence scoring by RMS, sequence-gap and backpressure warnings, and a deterministic
// live transcript (one segment per 2 s window) with talking points and draft tasks at the
// spec's cadences, posted to the core.
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { sleep } from '@mi/lib/async';
import type { Config } from '@mi/lib/config';
import type { Logger } from '@mi/lib/telemetry/log';
import type { StreamingStart } from './protocol';
import { ok, type RestClient } from '@mi/client';
import {
  FRAME_MS,
  WINDOW_FRAMES,
  featureVector,
  phraseOf,
  rmsPcm16,
  speakerOf,
  stableUuid,
  talkingPointText,
  taskText,
  windowOf,
} from './content';
import type { FaultState } from './faults';

export type MlLimits = Pick<
  Config,
  | 'ML_AUDIO_QUEUE_CAPACITY'
  | 'ML_BACKPRESSURE_QUEUE_DEPTH'
  | 'ML_INSIGHT_WARNING_GAP_FRAMES'
  | 'ML_NO_AUDIO_WINDOW_SECONDS'
  | 'ML_NO_AUDIO_RMS_THRESHOLD'
  | 'ML_TALKING_POINT_CADENCE_SEGMENTS'
  | 'ML_TALKING_POINT_CADENCE_SECONDS'
  | 'ML_TASK_CADENCE_SEGMENTS'
  | 'ML_DRAIN_TIMEOUT_SECONDS'
  | 'ML_INSIGHT_CONTEXT_SEGMENTS'
  | 'ML_SEGMENT_FEATURE_MAX_PER_SPEAKER'
>;

export type SessionInit = StreamingStart & { id: string };

interface Frame {
  seq: number;
  bytes: Buffer;
}

interface WindowState {
  frames: number;
  voiced: number;
}

const DROPPED_REPORT_DELAY_MS = 100;
/** Incomplete windows further back than this are forgotten (their last frame never came). */
const WINDOW_MEMORY = 10;

export class StreamingSession {
  socket: WebSocket | null = null;
  /** The server's fault switch (./faults.ts): read at each segment. */
  faults: FaultState = { fault: null, delayMs: 0 };
  processed = 0;
  dropped = 0;
  private readonly queue: Frame[] = [];
  private busy = false;
  private closed = false;
  private droppedUnreported = 0;
  private droppedTimer: NodeJS.Timeout | null = null;
  private highestSeq: number;
  private silentRun = 0;
  private silentFrom = 0;
  private noAudioReported = false;
  private backpressureReported = false;
  private readonly windows = new Map<number, WindowState>();
  private readonly emitted = new Set<number>();
  private readonly recentTexts: string[] = [];
  private segmentsSinceTalkingPoint = 0;
  private lastTalkingPointAt = Date.now();
  private segmentsSinceTask = 0;
  private readonly ready: Promise<void>;
  private readonly idleWaiters = new Set<() => void>();
  private readonly silentFramesForWarning: number;

  constructor(
    readonly init: SessionInit,
    private readonly limits: MlLimits,
    private readonly core: RestClient,
    private readonly log: Logger,
    private readonly paused: () => boolean,
    private readonly trace: Record<string, string>,
  ) {
    this.highestSeq = init.start_sequence - 1;
    this.silentFramesForWarning = Math.max(1, Math.round((limits.ML_NO_AUDIO_WINDOW_SECONDS * 1000) / FRAME_MS));
    this.ready = init.start_sequence > 0 ? this.loadContext() : Promise.resolve();
  }

  /** A binary WebSocket message: `[u64 BE seq][frame bytes]`. */
  accept(message: Buffer): void {
    if (this.closed || message.length < 8) return;
    const seq = Number(message.readBigUInt64BE(0));
    if (this.queue.length >= this.limits.ML_AUDIO_QUEUE_CAPACITY) {
      this.dropped++;
      this.droppedUnreported++;
      this.droppedTimer ??= setTimeout(() => this.reportDropped(), DROPPED_REPORT_DELAY_MS);
      return;
    }
    this.queue.push({ seq, bytes: message.subarray(8) });
    if (this.queue.length > this.limits.ML_BACKPRESSURE_QUEUE_DEPTH && !this.backpressureReported) {
      this.backpressureReported = true;
      this.warn('backpressure', {
        queue_depth: this.queue.length,
        threshold: this.limits.ML_BACKPRESSURE_QUEUE_DEPTH,
        capacity: this.limits.ML_AUDIO_QUEUE_CAPACITY,
      });
    }
    this.pump();
  }

  /** Starts (or resumes, after a hang) processing the queue. */
  pump(): void {
    if (this.busy || this.closed) return;
    this.busy = true;
    void this.run().finally(() => {
      this.busy = false;
      this.notifyIdle();
    });
  }

  /**
   * Waits until the queue is empty, at most timeoutMs; true when drained. At the bound the rest of
   * the queue is given up, and the frame in hand finished first: nothing is posted after the answer.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.isIdle()) return true;
    let timedOut = false;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.idleWaiters.delete(onIdle);
        resolve(!timedOut);
      };
      const onIdle = () => done();
      const timer = setTimeout(() => {
        timedOut = true;
        this.closed = true;
        this.queue.length = 0;
        if (this.isIdle()) done();
      }, timeoutMs);
      this.idleWaiters.add(onIdle);
    });
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
    if (this.droppedTimer) clearTimeout(this.droppedTimer);
    this.droppedTimer = null;
    this.socket?.close(1000, 'session ended');
    this.socket = null;
  }

  private isIdle() {
    return this.queue.length === 0 && !this.busy;
  }

  private notifyIdle() {
    if (!this.isIdle()) return;
    for (const w of [...this.idleWaiters]) w();
  }

  private async run(): Promise<void> {
    await this.ready;
    while (!this.closed && !this.paused() && this.queue.length) {
      const frame = this.queue.shift()!;
      if (this.queue.length <= this.limits.ML_BACKPRESSURE_QUEUE_DEPTH / 2) this.backpressureReported = false;
      try {
        await this.process(frame);
      } catch (err) {
        this.log.warn({ err: String(err), session: this.init.id }, 'fake ML: processing a frame failed');
      }
      this.processed++;
    }
  }

  private async process({ seq, bytes }: Frame): Promise<void> {
    if (seq > this.highestSeq + 1) {
      const gap = seq - this.highestSeq - 1;
      if (gap >= this.limits.ML_INSIGHT_WARNING_GAP_FRAMES) {
        this.warn('insight_warning', { gap_frames: gap, from_sequence: this.highestSeq + 1, to_sequence: seq - 1 });
      }
    }
    this.highestSeq = Math.max(this.highestSeq, seq);

    // Raw PCM is scored per frame; the fake cannot decode Opus, so those frames count as voiced.
    const voiced = this.init.encoding !== 'pcm_s16le' || rmsPcm16(bytes) >= this.limits.ML_NO_AUDIO_RMS_THRESHOLD;
    if (this.init.encoding === 'pcm_s16le') this.scoreSilence(seq, voiced);

    const w = windowOf(seq);
    const state = this.windows.get(w) ?? { frames: 0, voiced: 0 };
    state.frames++;
    if (voiced) state.voiced++;
    this.windows.set(w, state);
    if (seq % WINDOW_FRAMES === WINDOW_FRAMES - 1) {
      this.windows.delete(w);
      for (const old of this.windows.keys()) if (old < w - WINDOW_MEMORY) this.windows.delete(old);
      if (state.voiced > 0 && !this.emitted.has(w)) await this.emitSegment(w);
    }
  }

  private scoreSilence(seq: number, voiced: boolean) {
    if (voiced) {
      this.silentRun = 0;
      this.noAudioReported = false;
      return;
    }
    if (this.silentRun === 0) this.silentFrom = seq;
    this.silentRun++;
    if (this.silentRun >= this.silentFramesForWarning && !this.noAudioReported) {
      this.noAudioReported = true;
      this.warn('no_audio_detected', {
        window_seconds: this.limits.ML_NO_AUDIO_WINDOW_SECONDS,
        rms_threshold: this.limits.ML_NO_AUDIO_RMS_THRESHOLD,
        from_sequence: this.silentFrom,
        to_sequence: seq,
      });
    }
  }

  private async emitSegment(w: number): Promise<void> {
    this.emitted.add(w);
    const label = speakerOf(w);
    const text = phraseOf(w);
    const { transcription_id, meeting_id } = this.init;
    const { fault, delayMs } = this.faults;
    const windowMs = WINDOW_FRAMES * FRAME_MS;
    let [start, end] = [w * windowMs, (w + 1) * windowMs];
    if (fault === 'backwards') [start, end] = [end, start];
    if (fault === 'overlap') start = Math.max(0, start - windowMs - windowMs / 2);
    if (fault === 'ignored-drain') await sleep(delayMs);
    const segments = {
      segments: [
        {
          // Its own id and key: a retried or resumed post of this window adds nothing (decisions.md section 7).
          id: fault === 'dupes' ? randomUUID() : stableUuid(transcription_id, 'segment', w),
          speaker_label: label,
          text,
          start_ms: start,
          end_ms: end,
          confidence: 0.9,
          is_final: true,
          feature_vector: featureVector(label, w),
        },
      ],
    };
    const key = fault === 'dupes' ? randomUUID() : stableUuid(transcription_id, 'segments', w);
    ok(
      await this.core.POST('/transcriptions/{id}/segments', {
        params: { path: { id: transcription_id }, header: { 'idempotency-key': key } },
        body: segments,
        headers: this.trace,
      }),
    );
    this.recentTexts.push(text);
    if (this.recentTexts.length > this.limits.ML_INSIGHT_CONTEXT_SEGMENTS) this.recentTexts.shift();

    this.segmentsSinceTalkingPoint++;
    const dueBySeconds = Date.now() - this.lastTalkingPointAt >= this.limits.ML_TALKING_POINT_CADENCE_SECONDS * 1000;
    if (this.segmentsSinceTalkingPoint >= this.limits.ML_TALKING_POINT_CADENCE_SEGMENTS || dueBySeconds) {
      const texts = this.recentTexts.slice(-this.segmentsSinceTalkingPoint);
      this.segmentsSinceTalkingPoint = 0;
      this.lastTalkingPointAt = Date.now();
      ok(
        await this.core.POST('/meetings/{id}/talking-points', {
          params: {
            path: { id: meeting_id },
            header: { 'idempotency-key': stableUuid(transcription_id, 'talking-point', w) },
          },
          body: { content: talkingPointText(texts), is_final: false },
          headers: this.trace,
        }),
      );
    }

    this.segmentsSinceTask++;
    if (this.segmentsSinceTask >= this.limits.ML_TASK_CADENCE_SEGMENTS) {
      this.segmentsSinceTask = 0;
      ok(
        await this.core.POST('/meetings/{id}/tasks', {
          params: { path: { id: meeting_id }, header: { 'idempotency-key': stableUuid(transcription_id, 'task', w) } },
          body: { tasks: [{ content: taskText(text) }] },
          headers: this.trace,
        }),
      );
    }
  }

  /** On a resumed session: the recent segments give context and mark windows already posted. */
  private async loadContext(): Promise<void> {
    const limit = Math.min(200, Math.max(1, this.limits.ML_INSIGHT_CONTEXT_SEGMENTS));
    try {
      const page = ok(
        await this.core.GET('/transcriptions/{id}/segments', {
          params: { path: { id: this.init.transcription_id }, query: { order: 'desc', limit } },
          headers: this.trace,
        }),
      );
      const items = page.items;
      for (const s of [...items].reverse()) {
        if (this.faults.fault !== 'dupes') this.emitted.add(Math.floor(s.start_ms / (WINDOW_FRAMES * FRAME_MS)));
        this.recentTexts.push(s.text);
      }
    } catch (err) {
      this.log.warn({ err: String(err), session: this.init.id }, 'fake ML: could not load the insight context');
    }
  }

  private reportDropped() {
    this.droppedTimer = null;
    if (!this.droppedUnreported) return;
    this.send({ type: 'dropped', count: this.droppedUnreported, total: this.dropped });
    this.droppedUnreported = 0;
  }

  private warn(code: 'insight_warning' | 'no_audio_detected' | 'backpressure', detail: Record<string, unknown>) {
    this.send({ type: 'warning', code, detail });
  }

  private send(message: unknown) {
    if (this.socket?.readyState === 1) this.socket.send(JSON.stringify(message));
  }
}
