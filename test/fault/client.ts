// A recording client that behaves as the protocol (decisions.md section 5) says, and keeps
// the books the checker needs: it holds every frame until an AudioStoredProgressEvent (or a
// RecordingResumed / RecordingStopped) reports it durable (highest_contiguous_sequence), on any
// close reconnects to any instance, says hello, resumes, resends what is missing and everything
// after it, and after the stop uploads the gaps the server still lacks over REST. A take the
// server stopped meanwhile (the client was away longer than the disconnect grace) gets its gaps
// uploaded the same way, and recording goes on in a new take (audio_version).
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { sleep } from '../support/poll';

export interface ClientOptions {
  name: string;
  token: string;
  apiUrl: string;
  meetingId: string;
  /** WebSocket URLs of the instances; reconnects try them in random order. */
  instances: () => string[];
  /** The bytes of a frame: unique per take and sequence. */
  frameBytes: (audioVersion: number, seq: number) => Buffer;
  log?: (line: string) => void;
}

type Msg = Record<string, any>;
type Phase = 'idle' | 'connecting' | 'resuming' | 'live' | 'stopping' | 'stopped';

/** Gap uploads: at most this many frames per PUT (well under RECORDING_MAX_CHUNK_BYTES). */
const GAP_CHUNK_FRAMES = 100;
const RECONNECT_BACKOFF_MS = [50, 200, 500, 1_000, 2_000];
const STOP_ATTEMPT_MS = 20_000;

export interface ClientStats {
  reconnects: number;
  resumes: number;
  resent: number;
  gapFramesUploaded: number;
  /** Takes the server stopped under the client (disconnect grace), continued in a new take. */
  takesStoppedByServer: number;
  anomalies: string[];
}

/** What the checker needs of one take. */
export interface TakeBooks {
  audioVersion: number;
  /** Frames 0..sent-1 were recorded. */
  sent: number;
  ackedThrough: number;
}

export class ResilientClient {
  audioVersion = 0;
  /** Frames 0..nextSeq-1 exist. */
  nextSeq = 0;
  /** Highest sequence the server acknowledged over the WebSocket (progress, RecordingResumed, RecordingStopped). */
  ackedThrough = -1;
  readonly unacked = new Map<number, Buffer>();
  readonly stats: ClientStats = {
    reconnects: 0,
    resumes: 0,
    resent: 0,
    gapFramesUploaded: 0,
    takesStoppedByServer: 0,
    anomalies: [],
  };
  /** Earlier takes of this client, ended by the server. */
  readonly finishedTakes: TakeBooks[] = [];
  /** The instance URL of the current connection. */
  url: string | null = null;
  private ws: WebSocket | null = null;
  private phase: Phase = 'idle';
  private finished = false;
  private failures = 0;
  private waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  private resendTimer: NodeJS.Timeout | null = null;
  private offlineUntil = 0;
  /** finish() is under way: a take found stopped is not followed by a new one. */
  private finishing = false;
  private rolling: Promise<void> | null = null;
  private readonly clientId = randomUUID();

  constructor(readonly o: ClientOptions) {}

  /** Every take of this client, the current one last. */
  takes(): TakeBooks[] {
    return [
      ...this.finishedTakes,
      { audioVersion: this.audioVersion, sent: this.nextSeq, ackedThrough: this.ackedThrough },
    ];
  }

  /** Connects and starts the take. */
  async begin(): Promise<void> {
    await this.connect();
    this.audioVersion = await this.startTake();
    this.phase = 'live';
  }

  /** Records `n` more frames: sent at once when attached, otherwise held for the resume. */
  produce(n: number): void {
    if (this.rolling) return; // between takes nothing is recorded
    for (let i = 0; i < n; i++) {
      const seq = this.nextSeq++;
      const bytes = this.o.frameBytes(this.audioVersion, seq);
      this.unacked.set(seq, bytes);
      if (this.phase === 'live') this.sendFrame(seq, bytes);
    }
  }

  /** The network drops the connection (no close handshake). */
  dropSocket(): void {
    this.ws?.terminate();
  }

  /** The client loses the network for `ms`: no connection, frames are held. */
  goOffline(ms: number): void {
    this.offlineUntil = Date.now() + ms;
    this.ws?.terminate();
  }

  /** Stops the take (resuming first if needed), waits for it to be stopped, uploads what is missing. */
  async finish(): Promise<void> {
    await this.rolling;
    this.finishing = true;
    for (let attempt = 0; ; attempt++) {
      await this.untilLive(60_000);
      const state = await this.recordingState();
      if (state.state !== 'recording') break; // stopped by the server (or stopping): gaps below
      this.phase = 'stopping';
      const answer = await this.request(
        { type: 'StopRecordingCommand', meeting_id: this.o.meetingId },
        'RecordingStopped',
        STOP_ATTEMPT_MS,
      ).catch((err: Error): Msg => ({ type: 'lost', detail: err.message }));
      if (answer.type === 'RecordingStopped') {
        this.ack(answer.highest_contiguous_sequence);
        break;
      }
      if (attempt >= 5) throw new Error(`${this.o.name}: the stop did not complete: ${JSON.stringify(answer)}`);
      this.phase = this.ws?.readyState === WebSocket.OPEN ? 'live' : this.phase;
      this.note(`stop attempt ${attempt + 1} answered ${JSON.stringify(answer).slice(0, 200)}`);
      // This connection no longer holds the take (it moved): take it back, then stop again.
      if (answer.code === 'no_recording' && this.phase === 'live') await this.resume();
      await sleep(500);
    }
    this.finished = true;
    this.phase = 'stopped';
    this.ws?.close();
    await this.untilStopped();
    await this.uploadGaps();
  }

  close(): void {
    this.finished = true;
    if (this.resendTimer) clearTimeout(this.resendTimer);
    this.ws?.terminate();
  }

  // --- connection ----------------------------------------------------------------------------

  private async connect(): Promise<void> {
    this.phase = 'connecting';
    for (;;) {
      while (Date.now() < this.offlineUntil) await sleep(100);
      const urls = shuffle(this.o.instances());
      for (const url of urls) {
        try {
          await this.open(url);
          return;
        } catch {
          // that instance is down or refused us: try the next one
        }
      }
      await sleep(RECONNECT_BACKOFF_MS[Math.min(this.failures++, RECONNECT_BACKOFF_MS.length - 1)]);
      if (this.finished) throw new Error('closed');
    }
  }

  private open(url: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { handshakeTimeout: 5_000 });
      let ready = false;
      const timer = setTimeout(() => ws.terminate(), 10_000);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', token: this.o.token, client_id: this.clientId })));
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        const m = JSON.parse(String(data)) as Msg;
        if (!ready && m.type === 'ready') {
          ready = true;
          clearTimeout(timer);
          this.ws = ws;
          this.url = url;
          this.failures = 0;
          resolve();
          return;
        }
        if (this.ws === ws) this.onMessage(m);
      });
      ws.on('error', () => undefined);
      ws.once('close', (code) => {
        clearTimeout(timer);
        if (!ready) return reject(new Error(`closed ${code} before ready`));
        if (this.ws === ws) this.onClose(code);
      });
    });
  }

  private onClose(code: number): void {
    if (!this.finished) this.trace(`connection to ${this.url} closed ${code}`);
    this.ws = null;
    this.url = null;
    if (this.finished) return;
    this.stats.reconnects++;
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    await this.connect().catch(() => undefined);
    if (this.finished || !this.ws) return;
    if (this.rolling) return; // the new take is being started
    if (this.audioVersion) await this.resume();
  }

  /** ResumeRecordingCommand; then resend every frame not reported durable. */
  private async resume(): Promise<void> {
    if (this.rolling) return;
    this.phase = 'resuming';
    for (let attempt = 0; ; attempt++) {
      const answer = await this.request(
        { type: 'ResumeRecordingCommand', meeting_id: this.o.meetingId, audio_version: this.audioVersion },
        'RecordingResumed',
      ).catch((err: Error) => ({ type: 'lost', detail: err.message }) as Msg);
      if (answer.type === 'RecordingResumed') {
        this.stats.resumes++;
        this.trace(
          `resumed on ${this.url}: contiguous ${answer.highest_contiguous_sequence}, missing ${JSON.stringify(answer.missing_ranges)}, resending ${this.unacked.size}`,
        );
        this.ack(answer.highest_contiguous_sequence);
        this.phase = 'live';
        this.resendAll();
        return;
      }
      if (answer.type === 'lost') return; // the connection went away: the next reconnect resumes
      if (answer.code === 'recording_not_open' || answer.code === 'recording_stopping') {
        // Stopped by the server: its gaps go up, then (unless the client is stopping anyway) a new take.
        this.trace(`resume answered ${answer.code}`);
        this.phase = 'live';
        if (!this.finishing) void this.rollOver();
        return;
      }
      if (attempt >= 10) {
        // Leave it to the stop (or the gap upload) to sort out; frames stay held meanwhile.
        this.phase = 'live';
        return this.note(`resume keeps failing: ${JSON.stringify(answer)}`);
      }
      await sleep(300);
    }
  }

  private onMessage(m: Msg): void {
    this.waiters = this.waiters.filter((w) => (w.pred(m) ? (w.resolve(m), false) : true));
    switch (m.type) {
      case 'AudioStoredProgressEvent':
        if (m.meeting_id === this.o.meetingId && m.audio_version === this.audioVersion)
          this.ack(m.highest_contiguous_sequence);
        return;
      case 'RecordingReleased':
        // The take moved (or this instance stops): take it back on this connection.
        this.trace(`released (${m.reason})`);
        if (m.meeting_id === this.o.meetingId && !this.finished && this.phase === 'live') void this.resume();
        return;
      case 'error':
        if (m.ref === 'audio' && (m.code === 'buffer_full' || m.code === 'no_recording'))
          this.scheduleResend(m.code === 'no_recording');
        return;
    }
  }

  // --- takes ---------------------------------------------------------------------------------

  /** StartRecordingCommand; resolves with the new take's audio_version. */
  private async startTake(): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      await this.untilConnected(60_000);
      const answer = await this.request(
        { type: 'StartRecordingCommand', meeting_id: this.o.meetingId, encoding: 'pcm_s16le', sample_rate: 16000 },
        'RecordingStarted',
      ).catch((err: Error): Msg => ({ type: 'lost', detail: err.message }));
      if (answer.type === 'RecordingStarted') {
        this.o.log?.(`${this.o.name} v${answer.audio_version}: started on ${this.url}`);
        return answer.audio_version;
      }
      if (answer.code === 'recording_open') {
        // An earlier start did begin a take, but its answer was lost with the connection: take that one.
        const latest = await this.recordingState(null);
        const resumed = await this.request(
          { type: 'ResumeRecordingCommand', meeting_id: this.o.meetingId, audio_version: latest.audio_version },
          'RecordingResumed',
        ).catch((err: Error): Msg => ({ type: 'lost', detail: err.message }));
        if (resumed.type === 'RecordingResumed') {
          this.o.log?.(`${this.o.name} v${latest.audio_version}: started (answer lost), resumed on ${this.url}`);
          return latest.audio_version;
        }
      }
      if (attempt >= 10) throw new Error(`${this.o.name}: could not start a take: ${JSON.stringify(answer)}`);
      await sleep(300);
    }
  }

  /**
   * The server stopped the take while the client was away: upload what it lacks (the frames
   * held, which nothing acknowledged), then go on recording in a new take.
   */
  private rollOver(): Promise<void> {
    this.rolling ??= (async () => {
      this.stats.takesStoppedByServer++;
      const stopped = await this.untilStopped();
      this.trace(
        `stopped by the server (${stopped.stop_reason}): contiguous ${stopped.highest_contiguous_sequence} of ${this.nextSeq}, missing ${JSON.stringify(stopped.missing_ranges)}`,
      );
      await this.uploadGaps();
      const next = await this.startTake();
      this.finishedTakes.push({ audioVersion: this.audioVersion, sent: this.nextSeq, ackedThrough: this.ackedThrough });
      this.audioVersion = next;
      this.nextSeq = 0;
      this.ackedThrough = -1;
      this.unacked.clear();
    })()
      .catch((err) => this.note(`rolling over to a new take failed: ${(err as Error).message}`))
      .finally(() => {
        this.rolling = null;
        // Connected: record on. Otherwise the reconnect resumes (and, if the old take is still the current one, rolls over again).
        if (this.ws?.readyState === WebSocket.OPEN) this.phase = 'live';
      });
    return this.rolling;
  }

  // --- frames --------------------------------------------------------------------------------

  private ack(seq: number): void {
    if (typeof seq !== 'number' || seq <= this.ackedThrough) return;
    for (let s = this.ackedThrough + 1; s <= seq; s++) this.unacked.delete(s);
    this.ackedThrough = seq;
  }

  private sendFrame(seq: number, bytes: Buffer): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const header = Buffer.alloc(8);
    header.writeBigUInt64BE(BigInt(seq));
    ws.send(Buffer.concat([header, bytes]), () => undefined);
  }

  private resendAll(): void {
    const seqs = [...this.unacked.keys()].sort((a, b) => a - b);
    for (const seq of seqs) this.sendFrame(seq, this.unacked.get(seq)!);
    this.stats.resent += seqs.length;
  }

  /** Frames refused for now (server buffer full, or not attached yet): resend them shortly. */
  private scheduleResend(reattach: boolean): void {
    if (this.resendTimer || this.finished) return;
    this.resendTimer = setTimeout(() => {
      this.resendTimer = null;
      if (this.phase !== 'live') return;
      if (reattach) void this.resume();
      else this.resendAll();
    }, 500);
  }

  // --- commands ------------------------------------------------------------------------------

  /** Sends a command; resolves with its answer, or an error message about it; rejects when the connection goes. */
  private request(cmd: Msg, answer: string, timeoutMs = 20_000): Promise<Msg> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    return new Promise((resolve, reject) => {
      const waiter = {
        pred: (m: Msg) =>
          (m.type === answer && m.meeting_id === cmd.meeting_id) || (m.type === 'error' && m.ref === cmd.type),
        resolve: (m: Msg) => {
          clearTimeout(timer);
          if (m.type === '__lost') reject(new Error(m.detail));
          else resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`no ${answer} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
      ws.send(JSON.stringify(cmd));
      ws.once('close', () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        waiter.resolve({ type: '__lost', detail: 'connection closed' });
      });
    });
  }

  private async untilConnected(timeoutMs: number): Promise<void> {
    for (const deadline = Date.now() + timeoutMs; this.ws?.readyState !== WebSocket.OPEN; await sleep(50)) {
      if (Date.now() > deadline) throw new Error(`${this.o.name}: not connected within ${timeoutMs} ms`);
    }
  }

  private async untilLive(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.phase !== 'live' || !this.ws) {
      if (Date.now() > deadline)
        throw new Error(`${this.o.name}: not attached within ${timeoutMs} ms (phase ${this.phase})`);
      await sleep(50);
    }
  }

  // --- after the stop: REST --------------------------------------------------------------------

  private async api(method: string, path: string, body?: Buffer): Promise<{ status: number; json: Msg }> {
    const res = await fetch(this.o.apiUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${this.o.token}`,
        ...(body ? { 'content-type': 'application/octet-stream' } : {}),
      },
      body: body ? new Uint8Array(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Msg) : {} };
  }

  /** The take's state (the current one by default; null: the meeting's latest take). */
  async recordingState(audioVersion: number | null = this.audioVersion): Promise<Msg> {
    const { status, json } = await this.api(
      'GET',
      `/meetings/${this.o.meetingId}/recording${audioVersion === null ? '' : `?audio_version=${audioVersion}`}`,
    );
    if (status !== 200) throw new Error(`${this.o.name}: GET recording answered ${status}: ${JSON.stringify(json)}`);
    return json;
  }

  /** A stop under way (settle, flush, ML drain) ends in `stopped`. */
  private async untilStopped(): Promise<Msg> {
    for (const deadline = Date.now() + 60_000; ; ) {
      const state = await this.recordingState();
      if (state.state !== 'recording' && state.state !== 'stopping') return state;
      if (Date.now() > deadline) throw new Error(`${this.o.name}: the take is still ${state.state}`);
      await sleep(200);
    }
  }

  /**
   * Uploads the frames it still holds that the server lacks: first the missing ranges, then
   * (their filling moves highest_contiguous_sequence to the last stored frame) the tail.
   */
  private async uploadGaps(): Promise<void> {
    for (let round = 0; round < 4; round++) {
      const state = await this.recordingState();
      if (state.state !== 'stopped') return this.note(`gap upload skipped: take is ${state.state}`);
      const wanted: number[] = [];
      for (const [start, end] of state.missing_ranges as [number, number][])
        for (let s = start; s <= end; s++) wanted.push(s);
      if (!wanted.length) for (let s = state.highest_contiguous_sequence + 1; s < this.nextSeq; s++) wanted.push(s);
      if (!wanted.length) return;
      for (const run of runsOf(wanted.filter((s) => this.unacked.has(s)))) {
        for (let start = run[0]; start <= run[1]; start += GAP_CHUNK_FRAMES) {
          const end = Math.min(start + GAP_CHUNK_FRAMES - 1, run[1]);
          const body = Buffer.concat(range(start, end).map((s) => this.unacked.get(s)!));
          const res = await this.putGap(start, end, body);
          if (res.status === 201 || res.status === 200) {
            this.stats.gapFramesUploaded += end - start + 1;
            this.trace(`uploaded gap ${start}-${end}: ${res.status}`);
          } else this.note(`gap ${start}-${end} answered ${res.status}: ${JSON.stringify(res.json).slice(0, 200)}`);
        }
      }
    }
  }

  /** Something the protocol did not lead the client to expect. */
  /** One gap range; a server error is retried with backoff, as a client would. */
  private async putGap(start: number, end: number, body: Buffer): Promise<{ status: number; json: Msg }> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.api(
        'PUT',
        `/meetings/${this.o.meetingId}/recording/audio/${start}-${end}?audio_version=${this.audioVersion}`,
        body,
      );
      if (res.status < 500 || attempt >= 5) return res;
      this.note(`gap ${start}-${end} answered ${res.status}; retrying`);
      await sleep(RECONNECT_BACKOFF_MS[Math.min(attempt + 2, RECONNECT_BACKOFF_MS.length - 1)]);
    }
  }

  private note(line: string): void {
    this.stats.anomalies.push(line);
    this.trace(line);
  }

  /** The client's course, for the controller's log. */
  private trace(line: string): void {
    this.o.log?.(`${this.o.name} v${this.audioVersion}: ${line}`);
  }
}

function runsOf(seqs: number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const s of [...seqs].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last && s === last[1] + 1) last[1] = s;
    else runs.push([s, s]);
  }
  return runs;
}

const range = (start: number, end: number) => Array.from({ length: end - start + 1 }, (_, i) => start + i);

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
