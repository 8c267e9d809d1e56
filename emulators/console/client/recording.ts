// One live recording from this tab: the microphone feeds @mi/client's LiveRecording, which does
// the protocol (start, hold frames until durable, resume and resend, stop, gap uploads,
// finalize). This file adds what is the console's own: the microphone and its level.
import {
  FRAME_BYTES,
  LiveRecording,
  type LiveConnection,
  type RecordingPhase,
  type RecordingSnapshot as LiveSnapshot,
} from '@mi/client';
import type { Api } from './api';
import { MicRecorder } from './recorder';

export type Phase = RecordingPhase | 'opening-mic';

export interface RecordingSnapshot extends Omit<LiveSnapshot, 'phase'> {
  phase: Phase;
  level: number;
}

export interface RecordingDeps {
  api: Api;
  socket: LiveConnection;
  maxChunkBytes: number;
  onChange(snapshot: RecordingSnapshot): void;
  /** The audio of the take can be played (the take was finalized). */
  onFinalized(meetingId: string): void;
}

/** Phases in which the microphone feeds the take. */
const CAPTURING: Phase[] = ['opening-mic', 'starting', 'recording', 'resuming'];

export class RecordingSession {
  private readonly live: LiveRecording;
  private recorder: MicRecorder | null = null;
  private level = 0;
  /** Before the take starts (microphone opening or refused), this tab's own state. */
  private local: { phase: 'opening-mic' | 'failed'; meetingId: string; error: string | null } | null = null;
  private finalizedNotified = false;

  constructor(private readonly deps: RecordingDeps) {
    this.live = new LiveRecording({
      rest: deps.api.rest,
      connection: deps.socket,
      maxChunkBytes: deps.maxChunkBytes,
      frameBytes: FRAME_BYTES,
      onChange: () => this.changed(),
    });
  }

  get snapshot(): RecordingSnapshot {
    const s = this.live.snapshot;
    if (this.local)
      return { ...s, phase: this.local.phase, meetingId: this.local.meetingId, error: this.local.error, level: 0 };
    return { ...s, level: this.level };
  }

  /** A take is open on this tab (or its stop is being completed). */
  get active(): boolean {
    return this.local?.phase === 'opening-mic' || this.live.active;
  }

  async start(meetingId: string): Promise<void> {
    if (this.active) throw new Error('a recording is already running in this tab');
    this.finalizedNotified = false;
    this.local = { phase: 'opening-mic', meetingId, error: null };
    this.emit();
    try {
      this.recorder = new MicRecorder();
      await this.recorder.open();
    } catch (err) {
      this.recorder = null;
      this.local = {
        phase: 'failed',
        meetingId,
        error: `microphone: ${err instanceof Error ? err.message : String(err)}`,
      };
      return this.emit();
    }
    this.local = null;
    const recorder = this.recorder;
    try {
      await this.live.start(meetingId);
      recorder.begin((pcm, rms) => this.onFrame(pcm, rms));
    } catch {
      await this.closeMic(); // the snapshot says why (phase failed)
    }
  }

  stop(): void {
    if (!['recording', 'resuming'].includes(this.live.snapshot.phase)) return;
    void this.closeMic(); // no frame is captured after this line
    this.live.stop();
  }

  /** Debug: do not send the next `frames` frames (they stay held), so the server sees a hole. */
  loseFrames(frames: number): void {
    this.live.loseFrames(frames);
  }

  private onFrame(pcm: Uint8Array, rms: number) {
    if (pcm.length !== FRAME_BYTES || !['recording', 'resuming'].includes(this.live.snapshot.phase)) return;
    this.level = rms;
    this.live.pushFrame(pcm);
  }

  private changed() {
    const s = this.live.snapshot;
    if (!CAPTURING.includes(s.phase) && this.recorder) void this.closeMic();
    if (s.phase === 'finalized' && !this.finalizedNotified && s.meetingId) {
      this.finalizedNotified = true;
      this.deps.onFinalized(s.meetingId);
    }
    this.emit();
  }

  private async closeMic() {
    const r = this.recorder;
    this.recorder = null;
    this.level = 0;
    await r?.close();
  }

  private emit() {
    this.deps.onChange(this.snapshot);
  }
}
