// One live recording from this tab (decisions.md section 5.3): start, stream 100 ms frames,
// keep every frame until the server reports it durable, resume on a new connection and resend
// what RecordingResumed says is missing, stop, upload still-missing ranges over REST, then wait
// for the sweep to finalize the take (the audio link starts answering).
import type { Api } from './api';
import { ApiProblem } from './api';
import { encodeFrame, FRAME_BYTES, FrameStore, rangeFrames, type Range } from './frames';
import type { LiveSocket } from './live-socket';
import { MicRecorder } from './recorder';
import type { ServerMessage } from './types';

export type Phase =
  | 'idle'
  | 'opening-mic'
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
  result: string;
}

export interface RecordingSnapshot {
  phase: Phase;
  meetingId: string | null;
  audioVersion: number | null;
  transcriptionId: string | null;
  /** Frames captured from the microphone (the next sequence number). */
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
  level: number;
  gapUploads: GapUpload[];
  /** The latest RecordingHealth / RecordingDurationWarning from the server. */
  notice: string | null;
  error: string | null;
}

export interface RecordingDeps {
  api: Api;
  socket: LiveSocket;
  maxChunkBytes: number;
  onChange(snapshot: RecordingSnapshot): void;
  /** The audio of the take can be played (the take was finalized). */
  onFinalized(meetingId: string): void;
}

const FINALIZE_POLL_MS = 1_000;
const FINALIZE_POLL_LIMIT_MS = 10 * 60_000;
const UPLOAD_TRIES = 4;
/** Server answers to ResumeRecordingCommand meaning the take is no longer open. */
const TAKE_CLOSED = new Set(['recording_not_open', 'recording_not_found', 'no_recording', 'recording_stopping']);
/** Server states of a take whose capture is still open. */
const CAPTURE_OPEN = ['recording', 'stopping'];

export class RecordingSession {
  private store = new FrameStore();
  private recorder: MicRecorder | null = null;
  private wantStop = false;
  /** Debug: this many of the next frames are kept but not sent, as if lost on the wire. */
  private skip = 0;
  /** Our StopRecordingCommand went out after every captured frame (same socket, in order). */
  private stopSent = false;
  /** RecordingStopped (or its equivalent) is handled once per take. */
  private stopHandled = false;
  private s: RecordingSnapshot = blank();

  constructor(private readonly deps: RecordingDeps) {}

  get snapshot(): RecordingSnapshot {
    return this.s;
  }

  /** A take is open on this tab (or its stop is being completed). */
  get active(): boolean {
    return !['idle', 'finalized', 'failed'].includes(this.s.phase);
  }

  async start(meetingId: string): Promise<void> {
    if (this.active) throw new Error('a recording is already running in this tab');
    this.store = new FrameStore();
    this.wantStop = false;
    this.skip = 0;
    this.stopSent = false;
    this.stopHandled = false;
    this.s = { ...blank(), phase: 'opening-mic', meetingId };
    this.emit();
    try {
      this.recorder = new MicRecorder();
      await this.recorder.open();
    } catch (err) {
      return this.fail(`microphone: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.set({ phase: 'starting' });
    const sent = this.deps.socket.sendJson({ type: 'StartRecordingCommand', meeting_id: meetingId, encoding: 'pcm_s16le', sample_rate: 16_000 });
    if (!sent) this.fail('not connected: wait for the connection and start again');
  }

  stop(): void {
    if (!['recording', 'resuming'].includes(this.s.phase)) return;
    this.wantStop = true;
    void this.closeMic(); // no frame is captured after this line
    this.set({ phase: 'stopping' });
    // Disconnected: the stop goes out after the resume has resent what the server lacks.
    if (this.s.live) this.sendStop();
  }

  /** The socket went away: frames are only kept until the take is resumed on a new one. */
  socketLost(): void {
    if (this.s.live) this.set({ live: false });
  }

  /** Every (re)connection: an open take continues on it. */
  socketReady(): void {
    if (this.s.audioVersion === null || !['recording', 'resuming', 'stopping'].includes(this.s.phase)) {
      if (this.s.phase === 'starting') this.fail('the connection was lost before RecordingStarted; look at the recording state and start again');
      return;
    }
    this.set({ phase: this.wantStop ? 'stopping' : 'resuming', live: false });
    this.deps.socket.sendJson({ type: 'ResumeRecordingCommand', meeting_id: this.s.meetingId!, audio_version: this.s.audioVersion });
  }

  /** Recording messages of our take; false when the message is not ours. */
  handle(msg: ServerMessage): boolean {
    if (msg.meeting_id !== undefined && msg.meeting_id !== this.s.meetingId) return false;
    if (msg.audio_version !== undefined && this.s.audioVersion !== null && msg.audio_version !== this.s.audioVersion) return false;
    switch (msg.type) {
      case 'RecordingStarted':
        if (this.s.phase !== 'starting') return false;
        this.set({ phase: 'recording', live: true, audioVersion: Number(msg.audio_version), transcriptionId: String(msg.transcription_id) });
        this.recorder!.begin((pcm, rms) => this.onFrame(pcm, rms));
        return true;
      case 'AudioStoredProgressEvent':
        this.durable(Number(msg.highest_contiguous_sequence));
        this.set({ framesStored: Number(msg.frames_stored ?? this.s.framesStored) });
        return true;
      case 'RecordingResumed':
        this.resumed(Number(msg.highest_contiguous_sequence), (msg.missing_ranges as Range[]) ?? []);
        return true;
      case 'RecordingStopped':
        void this.stopped(msg);
        return true;
      case 'RecordingReleased':
        // shutdown: the socket closes next and the take resumes on the new one. Otherwise
        // another connection took the take over (or it is not open any more).
        if (msg.reason === 'shutdown') this.set({ live: false, notice: 'server shutting down: resuming on a new connection' });
        else if (this.s.phase === 'recording' || this.s.phase === 'resuming') this.fail(`the server released the take: ${String(msg.reason)}`);
        return true;
      case 'RecordingHealth':
      case 'RecordingDurationWarning': {
        const { type, meeting_id: _m, audio_version: _v, ...detail } = msg;
        this.set({ notice: `${type}: ${JSON.stringify(detail)}` });
        return true;
      }
      case 'error':
        return this.onError(msg);
      default:
        return false;
    }
  }

  private onFrame(pcm: Uint8Array, rms: number) {
    if (pcm.length !== FRAME_BYTES) return;
    const seq = this.s.captured;
    this.store.add(seq, pcm);
    if (this.skip > 0 && this.s.live) this.skip--;
    else if (this.s.live) this.deps.socket.sendBinary(encodeFrame(seq, pcm));
    this.set({ captured: seq + 1, level: rms });
  }

  /** Debug: do not send the next `frames` frames (they stay held), so the server sees a hole. */
  loseFrames(frames: number): void {
    this.skip = frames;
  }

  private durable(highestContiguous: number) {
    if (!Number.isFinite(highestContiguous)) return;
    this.store.dropThrough(highestContiguous);
    this.set({ highestContiguous: Math.max(this.s.highestContiguous, highestContiguous) });
  }

  private resumed(highestContiguous: number, missing: Range[]) {
    if (!['resuming', 'stopping'].includes(this.s.phase)) return;
    this.durable(highestContiguous);
    const resend = this.store.toResend(highestContiguous, missing);
    for (const seq of resend) this.deps.socket.sendBinary(encodeFrame(seq, this.store.get(seq)!));
    this.set({ live: true, missingRanges: missing, resumes: this.s.resumes + 1, resent: this.s.resent + resend.length });
    if (this.wantStop) this.sendStop();
    else this.set({ phase: 'recording' });
  }

  private sendStop() {
    if (this.deps.socket.sendJson({ type: 'StopRecordingCommand', meeting_id: this.s.meetingId! })) this.stopSent = true;
  }

  private async stopped(msg: ServerMessage) {
    if (this.stopHandled || !['recording', 'resuming', 'stopping'].includes(this.s.phase)) return;
    this.stopHandled = true;
    this.set({ phase: 'stopping' });
    await this.closeMic();
    this.durable(Number(msg.highest_contiguous_sequence));
    const missing = (msg.missing_ranges as Range[]) ?? [];
    this.set({ live: false, missingRanges: missing, gapDeadline: (msg.gap_upload_deadline as string) ?? null, stopReason: String(msg.reason ?? '') });
    await this.afterStop(missing);
  }

  private onError(msg: ServerMessage): boolean {
    const text = `${String(msg.code)}: ${String(msg.message ?? '')}`;
    if (msg.ref === 'StartRecordingCommand' && this.s.phase === 'starting') {
      this.fail(text);
      return true;
    }
    if ((msg.ref === 'ResumeRecordingCommand' || msg.ref === 'StopRecordingCommand') && TAKE_CLOSED.has(String(msg.code))) {
      void this.closedElsewhere(text);
      return true;
    }
    if (!this.active) return false;
    this.set({ error: text });
    return true;
  }

  private async closedElsewhere(reason: string) {
    if (this.stopHandled) return;
    this.stopHandled = true;
    await this.closeMic();
    this.set({ phase: 'stopping', live: false, notice: reason });
    try {
      // A take still stopping has not settled its missing ranges yet.
      let rec = await this.deps.api.recording(this.s.meetingId!);
      for (let i = 0; i < 60 && CAPTURE_OPEN.includes(rec.state); i++) {
        await sleep(1_000);
        rec = await this.deps.api.recording(this.s.meetingId!);
      }
      this.durable(rec.highest_contiguous_sequence);
      this.set({ missingRanges: rec.missing_ranges, gapDeadline: rec.gap_upload_deadline, stopReason: rec.stop_reason });
      // Stopped without our stop (the disconnect grace ran out): the server never got what we
      // captured while away, so the frames past its highest stored one go up as a gap too.
      // After our own stop it had everything (the stop followed the frames on one socket).
      const highestStored = rec.frames_stored + rangeFrames(rec.missing_ranges) - 1;
      await this.afterStop(rec.missing_ranges, this.stopSent ? undefined : highestStored);
    } catch (err) {
      this.fail(`recording state: ${String(err)}`);
    }
  }

  private async afterStop(missing: Range[], tailAfter?: number) {
    this.set({ phase: 'uploading-gaps' });
    const maxFrames = Math.max(1, Math.floor(this.deps.maxChunkBytes / FRAME_BYTES));
    for (const run of this.store.runs(missing, maxFrames, tailAfter)) {
      const result = await this.uploadRun(run.start, run.end, concat(run.frames));
      if (result.startsWith('20')) for (let s = run.start; s <= run.end; s++) this.store.delete(s);
      this.set({ gapUploads: [...this.s.gapUploads, { start: run.start, end: run.end, result }] });
    }
    this.set({ phase: 'finalizing' });
    await this.waitForFinalize();
  }

  private async uploadRun(start: number, end: number, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
    let last = '';
    for (let i = 0; i < UPLOAD_TRIES; i++) {
      try {
        return String(await this.deps.api.uploadGap(this.s.meetingId!, this.s.audioVersion!, start, end, bytes));
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
    const until = Date.now() + FINALIZE_POLL_LIMIT_MS;
    while (Date.now() < until) {
      try {
        await this.deps.api.audioUrl(this.s.meetingId!);
        this.store = new FrameStore();
        const rec = await this.deps.api.recording(this.s.meetingId!);
        this.set({
          phase: 'finalized',
          highestContiguous: rec.highest_contiguous_sequence,
          framesStored: rec.frames_stored,
          missingRanges: rec.missing_ranges,
        });
        this.deps.onFinalized(this.s.meetingId!);
        return;
      } catch (err) {
        if (!(err instanceof ApiProblem) || err.status !== 404) this.set({ error: `audio link: ${String(err)}` });
      }
      await sleep(FINALIZE_POLL_MS);
    }
    this.set({ error: `not finalized after ${FINALIZE_POLL_LIMIT_MS / 60_000} min: look at the recording events` });
  }

  private async closeMic() {
    const r = this.recorder;
    this.recorder = null;
    await r?.close();
    if (r) this.set({ level: 0 });
  }

  private fail(error: string) {
    void this.closeMic();
    this.set({ phase: 'failed', live: false, error });
  }

  private set(patch: Partial<RecordingSnapshot>) {
    this.s = { ...this.s, ...patch, unacked: this.store.size };
    this.emit();
  }

  private emit() {
    this.deps.onChange(this.s);
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
    level: 0,
    gapUploads: [],
    notice: null,
    error: null,
  };
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

