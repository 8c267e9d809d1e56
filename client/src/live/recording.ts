// One live recording (decisions.md section 5.3), whatever produces the audio: start a take, send
// 100 ms frames, keep every frame until the server reports it durable, resume on every new
// connection and resend what RecordingResumed does not cover, stop, upload what is still missing
// over REST (with Content-Digest), then wait for the sweep to finalize the take.
import { uploadGap } from '../gap-upload.js';
import { ApiProblem, ok } from '../problem.js';
import type { RestClient } from '../rest.js';
import type { LiveConnection } from './connection.js';
import { encodeFrame, FrameStore, rangeFrames, toRanges, type Range } from './frames.js';
import type { ErrorMessage, RecordingStopped, ServerMessage, StartRecordingCommand } from './messages.js';

export type RecordingPhase =
  | 'idle'
  | 'starting'
  | 'recording'
  | 'resuming'
  | 'stopping'
  | 'uploading-gaps'
  | 'finalizing'
  | 'finalized'
  | 'failed';

export interface GapUpload {
  start: number;
  end: number;
  /** The HTTP status, or why it failed. */
  result: string;
}

export interface RecordingSnapshot {
  phase: RecordingPhase;
  meetingId: string | null;
  audioVersion: number | null;
  transcriptionId: string | null;
  /** Frames pushed so far (the next sequence number). */
  captured: number;
  /** Frames held until the server declares them durable. */
  unacked: number;
  /** Whether frames currently go out on the socket (false while disconnected or resuming). */
  live: boolean;
  highestContiguous: number;
  framesStored: number;
  missingRanges: Range[];
  gapDeadline: string | null;
  stopReason: string | null;
  resumes: number;
  resent: number;
  gapUploads: GapUpload[];
  /** The latest RecordingHealth / RecordingDurationWarning from the server. */
  notice: string | null;
  error: string | null;
}

export interface LiveRecordingOptions {
  rest: RestClient;
  connection: LiveConnection;
  /** Largest gap upload body (the server's limit). */
  maxChunkBytes?: number;
  /** Bytes of one frame (3,200 for 100 ms of 16 kHz s16le): sizes gap upload runs. */
  frameBytes?: number;
  encoding?: StartRecordingCommand['encoding'];
  sampleRate?: number;
  onChange?(snapshot: RecordingSnapshot): void;
  /** How long start() waits for the connection to be ready (default 15 s). */
  connectTimeoutMs?: number;
  /**
   * Poll the take's state after the stop until the sweep finalizes it (default); false ends at
   * 'finalizing'. The sweep runs every RECORDING_GAP_SWEEP_INTERVAL_SECONDS (the local stack: 2 s).
   */
  awaitFinalize?: boolean;
  finalizePollMs?: number;
  finalizeLimitMs?: number;
}

const UPLOAD_TRIES = 4;
/** Server answers to a resume or stop meaning the take is no longer open on any connection. */
const TAKE_CLOSED = new Set(['recording_not_open', 'recording_not_found', 'no_recording', 'recording_stopping']);
/** Server states of a take whose capture is still open. */
const CAPTURE_OPEN = ['recording', 'stopping'];
const ACTIVE: RecordingPhase[] = ['starting', 'recording', 'resuming', 'stopping', 'uploading-gaps', 'finalizing'];

export class LiveRecording {
  private store = new FrameStore();
  private wantStop = false;
  /** Test hook: this many of the next frames are kept but not sent, as if lost on the wire. */
  private skip = 0;
  /** Our StopRecordingCommand went out after every pushed frame (same socket, in order). */
  private stopSent = false;
  /** Our StartRecordingCommand went out (start() first waits for the connection). */
  private startSent = false;
  /** RecordingStopped (or its equivalent) is handled once per take. */
  private stopHandled = false;
  private s: RecordingSnapshot = blank();
  private started: { resolve(): void; reject(e: Error): void } | null = null;
  private ended: { resolve(s: RecordingSnapshot): void; promise: Promise<RecordingSnapshot> } = deferred();

  constructor(private readonly opts: LiveRecordingOptions) {
    opts.connection.subscribe({
      onMessage: (m) => this.handle(m),
      onReady: () => this.socketReady(),
      onStatus: (st) => st.state !== 'ready' && this.socketLost(),
    });
  }

  get snapshot(): RecordingSnapshot {
    return this.s;
  }

  /** A take is open (or its stop is being completed). */
  get active(): boolean {
    return ACTIVE.includes(this.s.phase);
  }

  /** Resolves when the take ends: finalized (or 'finalizing' without awaitFinalize), or failed. */
  get finished(): Promise<RecordingSnapshot> {
    return this.ended.promise;
  }

  /**
   * Starts a take; resolves on RecordingStarted (push frames from then on). Waits for the
   * connection to be ready first (up to `connectTimeoutMs`), so it may be called right after connect().
   */
  start(meetingId: string): Promise<void> {
    if (this.active) return Promise.reject(new Error('a recording is already running'));
    this.store = new FrameStore();
    this.wantStop = this.stopSent = this.stopHandled = this.startSent = false;
    this.skip = 0;
    this.ended = deferred();
    this.s = { ...blank(), phase: 'starting', meetingId };
    this.emit();
    return new Promise<void>((resolve, reject) => {
      this.started = { resolve, reject };
      const command = {
        type: 'StartRecordingCommand',
        meeting_id: meetingId,
        encoding: this.opts.encoding ?? 'pcm_s16le',
        sample_rate: this.opts.sampleRate ?? 16_000,
      } as const;
      this.opts.connection.whenReady(this.opts.connectTimeoutMs).then(
        () => {
          if (this.s.phase !== 'starting' || this.startSent) return;
          this.startSent = this.opts.connection.send(command);
          if (!this.startSent) this.fail('not connected: the connection was lost before the start; start again');
        },
        (err: Error) => this.fail(`not connected: ${err.message}`),
      );
    });
  }

  /** The next 100 ms frame: held until durable, sent now when the take is live. */
  pushFrame(bytes: Uint8Array): number {
    if (!['recording', 'resuming'].includes(this.s.phase))
      throw new Error(`no frame can be taken while ${this.s.phase}`);
    const seq = this.s.captured;
    this.store.add(seq, bytes);
    if (this.skip > 0 && this.s.live) this.skip--;
    else if (this.s.live) this.opts.connection.sendBinary(encodeFrame(seq, bytes));
    this.set({ captured: seq + 1 });
    return seq;
  }

  /** Test hook: the next `frames` frames are held but not sent, so the server sees a hole. */
  loseFrames(frames: number): void {
    this.skip = frames;
  }

  /** No frame is pushed after this. Disconnected, the stop goes out after the resume's resend. */
  stop(): void {
    if (!['recording', 'resuming'].includes(this.s.phase)) return;
    this.wantStop = true;
    this.set({ phase: 'stopping' });
    if (this.s.live) this.sendStop();
  }

  private socketLost(): void {
    if (this.s.live) this.set({ live: false });
  }

  /** Every (re)connection: an open take continues on it. */
  private socketReady(): void {
    if (
      this.s.audioVersion === null ||
      !['recording', 'resuming', 'stopping'].includes(this.s.phase) ||
      this.stopHandled
    ) {
      if (this.s.phase === 'starting' && this.startSent && this.s.audioVersion === null && this.started)
        this.fail('the connection was lost before RecordingStarted; look at the recording state and start again');
      return;
    }
    this.set({ phase: this.wantStop ? 'stopping' : 'resuming', live: false });
    this.opts.connection.send({
      type: 'ResumeRecordingCommand',
      meeting_id: this.s.meetingId!,
      audio_version: this.s.audioVersion,
    });
  }

  /** Recording messages of our take. */
  private handle(msg: ServerMessage): void {
    if (!this.active) return;
    const m = msg as { meeting_id?: string; audio_version?: number };
    if (m.meeting_id !== undefined && m.meeting_id !== this.s.meetingId) return;
    if (m.audio_version !== undefined && this.s.audioVersion !== null && m.audio_version !== this.s.audioVersion)
      return;
    switch (msg.type) {
      case 'RecordingStarted':
        if (this.s.phase !== 'starting') return;
        this.set({
          phase: 'recording',
          live: true,
          audioVersion: msg.audio_version,
          transcriptionId: msg.transcription_id,
        });
        this.started?.resolve();
        this.started = null;
        return;
      case 'AudioStoredProgressEvent':
        this.durable(msg.highest_contiguous_sequence);
        this.set({ framesStored: msg.frames_stored });
        return;
      case 'RecordingResumed':
        return this.resumed(msg.highest_contiguous_sequence, msg.missing_ranges ?? []);
      case 'RecordingStopped':
        return void this.stopped(msg);
      case 'RecordingReleased':
        // shutdown: the socket closes next and the take resumes on the new one. Otherwise
        // another connection took the take over (or it is not open any more).
        if (msg.reason === 'shutdown')
          this.set({ live: false, notice: 'server shutting down: resuming on a new connection' });
        else if (this.s.phase === 'recording' || this.s.phase === 'resuming')
          this.fail(`the server released the take: ${msg.reason}`);
        return;
      case 'RecordingHealth':
      case 'RecordingDurationWarning': {
        const { type, meeting_id: _m, audio_version: _v, ...detail } = msg;
        this.set({ notice: `${type}: ${JSON.stringify(detail)}` });
        return;
      }
      case 'error':
        return this.onError(msg);
    }
  }

  private durable(highestContiguous: number) {
    if (!Number.isFinite(highestContiguous)) return;
    this.store.dropThrough(highestContiguous);
    this.set({ highestContiguous: Math.max(this.s.highestContiguous, highestContiguous) });
  }

  private resumed(highestContiguous: number, missing: Range[]) {
    if (!['resuming', 'stopping'].includes(this.s.phase) || this.stopHandled) return;
    this.durable(highestContiguous);
    const resend = this.store.toResend(highestContiguous, missing);
    for (const seq of resend) this.opts.connection.sendBinary(encodeFrame(seq, this.store.get(seq)!));
    this.set({
      live: true,
      missingRanges: missing,
      resumes: this.s.resumes + 1,
      resent: this.s.resent + resend.length,
    });
    if (this.wantStop) this.sendStop();
    else this.set({ phase: 'recording' });
  }

  private sendStop() {
    if (this.opts.connection.send({ type: 'StopRecordingCommand', meeting_id: this.s.meetingId! }))
      this.stopSent = true;
  }

  private async stopped(msg: RecordingStopped) {
    if (this.stopHandled || !['recording', 'resuming', 'stopping'].includes(this.s.phase)) return;
    this.stopHandled = true;
    this.set({ phase: 'stopping' });
    this.durable(msg.highest_contiguous_sequence);
    const missing = msg.missing_ranges ?? [];
    this.set({
      live: false,
      missingRanges: missing,
      gapDeadline: msg.gap_upload_deadline ?? null,
      stopReason: msg.reason,
    });
    // Only the ranges the server names: a stop it sent us found this connection up, so it had
    // every frame we sent (a connection_closed stop reaches us as recording_not_open instead).
    await this.afterStop(missing);
  }

  private onError(msg: ErrorMessage) {
    const text = `${msg.code}: ${msg.message}`;
    if (msg.ref === 'StartRecordingCommand' && this.s.phase === 'starting') return this.fail(text);
    if ((msg.ref === 'ResumeRecordingCommand' || msg.ref === 'StopRecordingCommand') && TAKE_CLOSED.has(msg.code))
      return void this.closedElsewhere(text);
    this.set({ error: text });
  }

  /** The take was stopped without our RecordingStopped (e.g. the disconnect grace ran out). */
  private async closedElsewhere(reason: string) {
    if (this.stopHandled) return;
    this.stopHandled = true;
    this.set({ phase: 'stopping', live: false, notice: reason });
    try {
      // A take still stopping has not settled its missing ranges yet.
      let rec = await this.recordingState();
      for (let i = 0; i < 60 && CAPTURE_OPEN.includes(rec.state); i++) {
        await sleep(1_000);
        rec = await this.recordingState();
      }
      const missing = toRanges(rec.missing_ranges);
      this.durable(rec.highest_contiguous_sequence);
      this.set({ missingRanges: missing, gapDeadline: rec.gap_upload_deadline, stopReason: rec.stop_reason });
      // Without our stop the server never got what we pushed while away, so the frames past
      // its highest stored one go up too. After our own stop it had everything (same socket, in order).
      const highestStored = rec.frames_stored + rangeFrames(missing) - 1;
      await this.afterStop(missing, this.stopSent ? undefined : highestStored);
    } catch (err) {
      this.fail(`recording state: ${String(err)}`);
    }
  }

  /** The latest take, or the one of `audio_version`. */
  private async recordingState(audio_version?: number) {
    const query = audio_version === undefined ? {} : { audio_version };
    return ok(
      await this.opts.rest.GET('/meetings/{id}/recording', { params: { path: { id: this.s.meetingId! }, query } }),
    );
  }

  private async afterStop(missing: Range[], tailAfter?: number) {
    this.set({ phase: 'uploading-gaps' });
    const maxFrames = Math.max(
      1,
      Math.floor((this.opts.maxChunkBytes ?? 8 * 1024 * 1024) / (this.opts.frameBytes ?? 3200)),
    );
    for (const run of this.store.runs(missing, maxFrames, tailAfter)) {
      const result = await this.uploadRun(run.start, run.end, concat(run.frames));
      if (result.startsWith('20')) for (let s = run.start; s <= run.end; s++) this.store.delete(s);
      this.set({ gapUploads: [...this.s.gapUploads, { start: run.start, end: run.end, result }] });
    }
    this.set({ phase: 'finalizing' });
    if (this.opts.awaitFinalize === false) return this.ended.resolve(this.s);
    await this.waitForFinalize();
  }

  private async uploadRun(start: number, end: number, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
    let last = '';
    for (let i = 0; i < UPLOAD_TRIES; i++) {
      try {
        const { status, result } = await uploadGap(
          this.opts.rest,
          this.s.meetingId!,
          this.s.audioVersion!,
          start,
          end,
          bytes,
        );
        this.durable(result.highest_contiguous_sequence);
        return String(status);
      } catch (err) {
        // A 4xx is the server's answer (e.g. 410 past the deadline); retry only transport trouble and 5xx.
        if (err instanceof ApiProblem && err.status < 500) return `${err.status} ${err.detail}`;
        last = String(err);
        await sleep(500 * 2 ** i);
      }
    }
    return `failed: ${last}`;
  }

  private async waitForFinalize() {
    const until = Date.now() + (this.opts.finalizeLimitMs ?? 10 * 60_000);
    while (Date.now() < until) {
      try {
        // This take's state, not the audio link: GET /audio-url answers 404 until the sweep has
        // finalized the take, and in a browser every such answer is a logged failed request.
        const rec = await this.recordingState(this.s.audioVersion ?? undefined);
        if (rec.state === 'finalized') {
          this.store = new FrameStore();
          this.set({
            phase: 'finalized',
            highestContiguous: rec.highest_contiguous_sequence,
            framesStored: rec.frames_stored,
            missingRanges: toRanges(rec.missing_ranges),
          });
          return this.ended.resolve(this.s);
        }
      } catch (err) {
        this.set({ error: `recording state: ${String(err)}` });
      }
      await sleep(this.opts.finalizePollMs ?? 1_000);
    }
    this.set({ error: 'not finalized in time: look at the recording events' });
    this.ended.resolve(this.s);
  }

  private fail(error: string) {
    this.set({ phase: 'failed', live: false, error });
    this.started?.reject(new Error(error));
    this.started = null;
    this.ended.resolve(this.s);
  }

  private set(patch: Partial<RecordingSnapshot>) {
    this.s = { ...this.s, ...patch, unacked: this.store.size };
    this.emit();
  }

  private emit() {
    this.opts.onChange?.(this.s);
  }
}

function blank(): RecordingSnapshot {
  return {
    phase: 'idle',
    meetingId: null,
    audioVersion: null,
    transcriptionId: null,
    captured: 0,
    unacked: 0,
    live: false,
    highestContiguous: -1,
    framesStored: 0,
    missingRanges: [],
    gapDeadline: null,
    stopReason: null,
    resumes: 0,
    resent: 0,
    gapUploads: [],
    notice: null,
    error: null,
  };
}

function deferred(): { resolve(s: RecordingSnapshot): void; promise: Promise<RecordingSnapshot> } {
  let resolve!: (s: RecordingSnapshot) => void;
  const promise = new Promise<RecordingSnapshot>((r) => (resolve = r));
  return { resolve, promise };
}

function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
