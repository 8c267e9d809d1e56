// The storage pump of one take: writes the frames a recorder buffers as they fall due (a full
// segment, or a short run whose oldest frame waited the segment target), one pass at a time,
// retried with backoff and never given up while the take is held; a progress event that is due
// goes out in the same pass. The recorder (recorder.ts) decides what a write is.
import { backoffMs, sleep } from '@mi/lib/async';
import type { FrameBuffer, Run } from './frames';
import { FRAME_MS } from './protocol';
import { MAX_BATCH_RUNS } from './group-commit';

/** A backlog is written in objects of up to this many segment targets (see FrameBuffer.dueRuns). */
const BACKLOG_SEGMENTS_PER_OBJECT = 8;
const BACKOFF_MS = [100, 200, 500, 1_000, 2_000, 5_000];
/**
 * A run shorter than the target is written once its oldest frame waited the target plus this:
 * a steady stream's segment (whose last frame comes a frame interval before the target age)
 * fills up instead of being cut short by a late frame, which would leave its frames waiting a
 * segment more for their progress event.
 */
const AGE_SLACK_MS = 2 * FRAME_MS;

export interface PumpHost {
  /** Stores runs (objects, rows, their progress events); a throw is retried. */
  store(runs: Run[]): Promise<void>;
  /** A progress event is due with nothing to write (the interval). */
  readonly progressRequested: boolean;
  emitProgress(): Promise<void>;
  /** No client feeds the take: whatever waits is due now. */
  readonly detached: boolean;
  /** A write failed (attempt n; `report`: the first of a run of failures, then every tenth), or writes work again. */
  storageRetrying(attempt: number, err: Error, report: boolean): void;
  storageRecovered(attempts: number): void;
}

export class StoragePump {
  /** Set once the take is let go or finished: nothing is written after it. */
  halted = false;
  private pumping: Promise<void> | null = null;
  private again = false;
  private forced = 0;
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  private readonly maxAgeMs: number;

  constructor(
    private readonly frames: FrameBuffer,
    private readonly targetFrames: number,
    segmentTargetMs: number,
    private readonly host: PumpHost,
  ) {
    this.maxAgeMs = segmentTargetMs + AGE_SLACK_MS;
  }

  /** A frame came in: a full segment is written now, a short run when it falls due. */
  added(): void {
    if (this.frames.size >= this.targetFrames) this.kick();
    else if (!this.timer && !this.pumping) this.arm();
  }

  /** Runs a pass now (or right after the current one). */
  kick(): void {
    if (this.halted) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.clearTimer();
    this.pumping = this.pump().finally(() => {
      this.pumping = null;
      if (this.again && !this.halted) {
        this.again = false;
        this.kick();
      } else this.arm();
    });
  }

  /** Writes everything waiting; resolves when nothing waits or after timeoutMs. */
  async flushAll(timeoutMs = Infinity): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.forced++;
    try {
      while (this.frames.size > 0 && !this.halted && Date.now() < deadline) {
        this.kick();
        const pass = this.pumping ?? Promise.resolve();
        await (Number.isFinite(timeoutMs) ? Promise.race([pass, sleep(Math.max(0, deadline - Date.now()))]) : pass);
      }
    } finally {
      this.forced--;
    }
  }

  halt(): void {
    this.halted = true;
    this.clearTimer();
  }

  clearTimer(): void {
    if (this.timer) clearTimeout(this.timer), (this.timer = null);
  }

  private arm(): void {
    if (this.halted || this.timer) return;
    const due = this.frames.nextDueAt(this.maxAgeMs);
    if (due === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.kick();
      },
      Math.max(0, due - Date.now()),
    );
  }

  private async pump(): Promise<void> {
    for (let failures = 0; !this.halted; ) {
      this.again = false;
      const runs = this.frames.dueRuns({
        now: Date.now(),
        targetFrames: this.targetFrames,
        maxFrames: this.targetFrames * BACKLOG_SEGMENTS_PER_OBJECT,
        maxAgeMs: this.maxAgeMs,
        force: this.forced > 0 || this.host.detached,
      });
      if (!runs.length && !this.host.progressRequested) return;
      try {
        // One batch, then the due runs are taken again: a commit may have taught us rows that
        // cover frames we held, and a run must lie where we know of nothing stored (group-commit.ts).
        if (runs.length) await this.host.store(runs.slice(0, MAX_BATCH_RUNS));
        if (this.host.progressRequested) await this.host.emitProgress();
        if (this.failing) {
          this.failing = false;
          this.host.storageRecovered(failures);
        }
        failures = 0;
      } catch (err) {
        failures++;
        this.host.storageRetrying(failures, err as Error, !this.failing || failures % 10 === 0);
        this.failing = true;
        await sleep(backoffMs(BACKOFF_MS, failures - 1));
      }
    }
  }
}
