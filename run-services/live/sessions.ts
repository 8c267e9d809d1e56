// The recordings of this instance and the commands that move them: start, resume (taking a take
// over from any instance), stop, audio frames, and the disconnect grace stop.
import type { Coordination } from '@mi/lib/adapters/coordination';
import type { StoredEvent } from '@mi/lib/events/outbox';
import { coverage, listManifest, type ManifestRow } from '@mi/lib/repositories/manifest';
import { getMeeting } from '@mi/lib/repositories/meetings';
import {
  CAPTURE_OPEN,
  getRecording,
  recordingLeaseKey,
  touchOwnedTakes,
  type Recording,
} from '@mi/lib/repositories/recordings';
import type { Runtime } from '@mi/lib/adapters/runtime';
import type { Connection } from './connection';
import {
  FRAME_HEADER_BYTES,
  frameSequence,
  INT4_MAX,
  traceOf,
  type ErrorCode,
  type ResumeCommand,
  type StartCommand,
  type StopCommand,
} from './protocol';
import { MAX_MISSING_RANGES } from '@mi/lib/domain/coverage';
import { Recorder, type RecorderHost, type Take } from './recorder';
import { SegmentCommitter } from './group-commit';
import { toWsError } from './ws-errors';
import type { UnitOfWorkDeps } from '@mi/lib/use-cases/unit-of-work';
import { claimTake, startTake } from '@mi/lib/use-cases/recording';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { KeyedQueue, settleWithin } from '@mi/lib/async';

export interface SessionsDeps {
  rt: Runtime;
  coordination: Coordination;
  instanceId: string;
  mlUrl: string;
  /** The one TTL: how long each beat keeps the instance alive, and with it its leases and presence. */
  leaseTtlMs: number;
  heartbeatMs: number;
  dispatch(events: StoredEvent[]): void;
  /** Connections of the user: on this instance, and on all instances (Firestore presence). */
  localConnections(userId: string): number;
  countPresence(userId: string): Promise<number>;
}

/** A connection the server closed with ReconnectAdvised keeps its takes at least this long. */
export const ADVISED_RECONNECT_GRACE_SECONDS = 30;

const FRAME_ERRORS: Partial<Record<ErrorCode, string>> = {
  recording_stopping: 'the recording is stopping; this frame was not stored (upload it as a gap if needed)',
  sequence_out_of_range: "the sequence number is beyond the recording's maximum duration",
  buffer_full: 'too much audio is waiting for storage; this frame was not stored, resend it later',
  bad_frame:
    'a pcm_s16le frame is exactly sample_rate / 10 × 2 bytes of audio (3,200 at 16 kHz); a webm_opus frame at least one byte',
  too_many_gaps: `the take already misses ${MAX_MISSING_RANGES} ranges and this frame would open another (past the end with a gap, or splitting a missing range); it was not stored: send the missing frames first, then this one again`,
};

export class Sessions implements RecorderHost {
  readonly recorders = new Map<string, Recorder>();
  readonly committer: SegmentCommitter;
  /** One resume per take at a time on this instance. */
  private readonly resumes = new KeyedQueue();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  /** The beat under way, if any: beats never overlap, and shutdown waits for one before closing Firestore. */
  private beating: Promise<void> | null = null;

  /** This instance's unit of work: committed events reach its own connections first, then Pub/Sub. */
  private readonly uow: UnitOfWorkDeps;

  constructor(private readonly d: SessionsDeps) {
    this.uow = { db: d.rt.db, events: { publish: async (events) => d.dispatch(events) } };
    this.committer = new SegmentCommitter(
      d.rt.db,
      d.rt.store,
      (events) => events.length && d.dispatch(events),
      d.rt.log,
    );
  }

  get rt() {
    return this.d.rt;
  }
  get coordination() {
    return this.d.coordination;
  }
  get instanceId() {
    return this.d.instanceId;
  }
  get mlUrl() {
    return this.d.mlUrl;
  }
  get leaseTtlMs() {
    return this.d.leaseTtlMs;
  }

  dispatch(events: StoredEvent[]): void {
    this.d.dispatch(events);
  }

  closed(r: Recorder): void {
    if (this.recorders.get(r.key) === r) this.recorders.delete(r.key);
  }

  /** One beat now (the first, which marks the instance alive); resolves when it is done. */
  beat(): Promise<void> {
    this.beating ??= this.heartbeat().finally(() => (this.beating = null));
    return this.beating;
  }

  startHeartbeat(): void {
    this.heartbeatTimer ??= setInterval(() => void this.beat(), this.d.heartbeatMs);
  }

  /** Stops the beats; resolves once the one under way (if any) is done. */
  stopHeartbeat(): Promise<void> {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    return this.beating ?? Promise.resolve();
  }

  /**
   * Every OWNER_HEARTBEAT_SECONDS (or sooner, see service.ts): one statement touches every open
   * take this instance owns (a take missing from it was resumed elsewhere or stopped), one
   * Firestore write (the instance's document) keeps the instance, its leases and its presence
   * alive and checks every lease, and detached takes look for their user (the grace starts once
   * they are gone).
   */
  private async heartbeat(): Promise<void> {
    const startedAt = Date.now();
    const owned =
      this.recorders.size > 0 &&
      (await touchOwnedTakes(this.d.rt.db, this.d.instanceId).catch(
        (err) => void this.warn(err, 'owner heartbeat failed'),
      ));
    if (owned) {
      const keys = new Set(owned.map((t) => recordingLeaseKey(t.meeting_id, t.audio_version)));
      for (const r of this.recorders.values())
        if (r.createdAt < startedAt && !keys.has(r.key)) void r.ownershipLost('row owner changed');
    }
    const takes = [...this.recorders.values()].filter((r) => r.state === 'recording');
    const leases = await this.d.coordination
      .heartbeat({ owner: this.d.instanceId, ttlMs: this.d.leaseTtlMs, leaseKeys: takes.map((r) => r.key) })
      // Firestore unreachable: the row decides, and the instance's document lives on until its TTL.
      .catch((err) => void this.warn(err, 'instance heartbeat (liveness, leases, presence) failed'));
    for (const r of takes) if (leases && leases.get(r.key) === null) void r.ownershipLost('lease taken');
    for (const r of takes) if (r.state === 'recording' && !r.client && !r.gracePending) this.checkPresence(r);
  }

  /** A detached take: start the grace period once its user is gone everywhere. */
  private checkPresence(r: Recorder): void {
    void this.isUserGone(r.take.userId).then((gone) => {
      if (gone) r.scheduleGrace(this.d.rt.config.RECORDING_DISCONNECT_GRACE_SECONDS);
    });
  }

  graceExpired(r: Recorder): void {
    void this.isUserGone(r.take.userId).then((gone) => {
      if (gone) void r.stop('connection_closed');
      else r.note('disconnect_grace_cancelled', { reason: 'user connected' });
    });
  }

  // --- client commands -----------------------------------------------------------------------

  async start(conn: Connection, cmd: StartCommand): Promise<void> {
    const c = this.d.rt.config;
    if (conn.recorder)
      return conn.error('recording_in_progress', 'this connection is already recording; stop it first', cmd.type);
    const userId = conn.userId!;
    const maxDuration = Math.min(
      cmd.max_duration_seconds ?? c.RECORDING_MAX_DURATION_SECONDS,
      c.RECORDING_MAX_DURATION_SECONDS,
    );
    let created: Recording;
    try {
      const input = {
        meetingId: cmd.meeting_id,
        encoding: cmd.encoding,
        sampleRate: cmd.sample_rate,
        maxDurationSeconds: maxDuration,
        ownerInstance: this.d.instanceId,
        trace: traceOf(cmd) ?? conn.trace,
      };
      created = await runUseCase(this.uow, { userId }, startTake, input, { originClientId: conn.clientId });
    } catch (err) {
      const refused = toWsError(err);
      if (refused && 'error' in refused) return conn.error(refused.error, refused.message, cmd.type);
      throw err;
    }
    const r = this.adopt(conn, created, userId, []);
    await this.d.coordination
      .acquire(r.key, this.d.instanceId, this.d.leaseTtlMs)
      .catch((err) => this.warn(err, 'could not take the lease of a new take'));
    conn.log.info(
      {
        meeting_id: created.meeting_id,
        audio_version: created.audio_version,
        max_duration_seconds: created.max_duration_seconds,
      },
      'take started',
    );
    conn.send({
      type: 'RecordingStarted',
      meeting_id: created.meeting_id,
      audio_version: created.audio_version,
      transcription_id: created.transcription_id,
      max_duration_seconds: created.max_duration_seconds,
    });
  }

  async resume(conn: Connection, cmd: ResumeCommand): Promise<void> {
    const key = recordingLeaseKey(cmd.meeting_id, cmd.audio_version);
    const userId = conn.userId!;
    if (conn.recorder) {
      if (conn.recorder.key === key && conn.recorder.state === 'recording')
        return this.sendResumed(conn, conn.recorder);
      return conn.error('recording_in_progress', 'this connection is already recording another take', cmd.type);
    }
    if (!(await getMeeting(this.d.rt.db, { userId }, cmd.meeting_id)))
      return conn.error('meeting_not_found', 'meeting not found', cmd.type);
    // Beyond the column's range no take can exist (decisions.md section 6).
    if (cmd.audio_version > INT4_MAX) return conn.error('recording_not_found', 'no such recording take', cmd.type);

    await this.resumes.run(key, async () => {
      const local = this.recorders.get(key);
      if (local) {
        if (local.state !== 'recording') return conn.error('recording_stopping', 'the recording is stopping', cmd.type);
        local.attach(conn);
        conn.recorder = local;
        if (!conn.open) this.connectionClosed(conn);
        local.note('recording_resumed', { instance: this.d.instanceId, connection_id: conn.id, same_instance: true });
        conn.log.info(
          { meeting_id: cmd.meeting_id, audio_version: cmd.audio_version, same_instance: true },
          'take resumed',
        );
        return this.sendResumed(conn, local);
      }
      const { rt, instanceId } = this.d;
      const claimed = await runUseCase(this.uow, { userId }, claimTake, {
        meetingId: cmd.meeting_id,
        audioVersion: cmd.audio_version,
        ownerInstance: instanceId,
        connectionId: conn.id,
      });
      if (!claimed) {
        const rec = await getRecording(rt.db, cmd.meeting_id, cmd.audio_version);
        if (!rec || rec.audio_version !== cmd.audio_version)
          return conn.error('recording_not_found', 'no such recording take', cmd.type);
        return conn.error(
          'recording_not_open',
          `the take is ${rec.state}; upload missing audio with the gap-recovery endpoint`,
          cmd.type,
        );
      }
      // The old owner, if alive, sees the lease (or the row) taken at its next heartbeat and lets go.
      await this.d.coordination
        .takeOver(key, instanceId, this.d.leaseTtlMs)
        .catch((err) => this.warn(err, 'lease takeover failed'));
      const stored = await listManifest(rt.db, cmd.meeting_id, cmd.audio_version);
      conn.log.info(
        {
          meeting_id: cmd.meeting_id,
          audio_version: cmd.audio_version,
          same_instance: false,
          frames_stored: stored.length,
        },
        'take resumed',
      );
      this.sendResumed(conn, this.adopt(conn, claimed, userId, stored));
    });
  }

  async stop(conn: Connection, cmd: StopCommand): Promise<void> {
    const r = conn.recorder;
    if (r && r.take.meetingId === cmd.meeting_id) {
      conn.log.info({ meeting_id: cmd.meeting_id, audio_version: r.take.audioVersion }, 'take stop requested');
      // Not awaited: frames keep arriving (and are stored) during the settle time.
      void r.stop('user');
      return;
    }
    // A stop sent again after its take stopped (its RecordingStopped lost with a connection) is
    // answered with that stop, never refused (docs/retries.md).
    const stopped = await this.stoppedTake(conn.userId!, cmd.meeting_id);
    if (stopped) return void conn.send(stopped);
    conn.error('no_recording', 'this connection is not recording that meeting (resume it first)', cmd.type);
  }

  /** RecordingStopped of the meeting's latest take when its capture is closed (the coverage as it is now). */
  private async stoppedTake(userId: string, meetingId: string) {
    const { db } = this.d.rt;
    if (!(await getMeeting(db, { userId }, meetingId))) return null;
    const rec = await getRecording(db, meetingId);
    if (!rec?.stop_reason || CAPTURE_OPEN.includes(rec.state)) return null;
    const cov = await coverage(db, meetingId, rec.audio_version);
    return {
      type: 'RecordingStopped' as const,
      meeting_id: meetingId,
      audio_version: rec.audio_version,
      reason: rec.stop_reason,
      highest_contiguous_sequence: cov.highest_contiguous_sequence,
      missing_ranges: cov.missing_ranges,
      gap_upload_deadline: rec.gap_upload_deadline,
    };
  }

  frame(conn: Connection, data: Buffer): void {
    const seq = frameSequence(data);
    if (seq === null)
      return conn.frameError(
        'bad_frame',
        'a frame is an 8-byte big-endian sequence number followed by the audio bytes',
      );
    const size = data.length - FRAME_HEADER_BYTES;
    if (size > this.d.rt.config.LIVE_MAX_FRAME_BYTES) {
      return conn.frameError(
        'frame_too_large',
        `a frame holds at most ${this.d.rt.config.LIVE_MAX_FRAME_BYTES} bytes of audio (got ${size})`,
      );
    }
    const r = conn.recorder;
    if (!r)
      return conn.frameError(
        'no_recording',
        'no recording on this connection: send StartRecordingCommand or ResumeRecordingCommand first',
      );
    const error = r.frame(seq, data);
    if (error) conn.frameError(error, FRAME_ERRORS[error] ?? error);
  }

  // --- presence ------------------------------------------------------------------------------

  connectionClosed(conn: Connection): void {
    const r = conn.recorder;
    if (!r) return;
    conn.recorder = null;
    r.note('connection_closed', {
      connection_id: conn.id,
      instance: this.d.instanceId,
      reconnect_advised: conn.advised,
      frames_waiting: r.pendingFrames,
    });
    r.detach(conn, conn.advised ? ADVISED_RECONNECT_GRACE_SECONDS : 0);
  }

  /** The user has no connection left anywhere: their detached takes stop after the grace period. */
  userOffline(userId: string, minGraceSeconds = 0): void {
    const grace = Math.max(this.d.rt.config.RECORDING_DISCONNECT_GRACE_SECONDS, minGraceSeconds);
    for (const r of this.recorders.values()) if (r.take.userId === userId && !r.client) r.scheduleGrace(grace);
  }

  /** A connection of the user appeared somewhere: pending disconnect stops are off. */
  userOnline(userId: string): void {
    for (const r of this.recorders.values()) if (r.take.userId === userId) r.cancelGrace('reconnected');
  }

  // --- shutdown ------------------------------------------------------------------------------

  async flushAll(timeoutMs: number): Promise<void> {
    await Promise.allSettled([...this.recorders.values()].map((r) => r.flushAll(timeoutMs)));
  }

  /** Stops already under way may finish; every other take is left for a resume elsewhere. */
  async releaseAll(timeoutMs: number): Promise<void> {
    await Promise.allSettled(
      [...this.recorders.values()].map((r) =>
        r.state === 'recording' ? r.letGo('shutdown', timeoutMs) : settleWithin(r.stop('user'), timeoutMs),
      ),
    );
  }

  // --- helpers -------------------------------------------------------------------------------

  private adopt(conn: Connection, rec: Recording, userId: string, stored: ManifestRow[]): Recorder {
    const take: Take = {
      meetingId: rec.meeting_id,
      audioVersion: rec.audio_version,
      userId,
      transcriptionId: rec.transcription_id,
      encoding: rec.encoding,
      sampleRate: rec.sample_rate,
      maxDurationSeconds: rec.max_duration_seconds,
      startedAt: new Date(rec.started_at),
      trace: traceOf(rec.trace_context ?? {}), // a row stored before validation existed may hold anything
    };
    const r = new Recorder(this, take, stored);
    this.recorders.set(r.key, r);
    r.attach(conn);
    conn.recorder = r;
    if (!conn.open) {
      // The client left while the command ran: the take waits for a resume like any detached one.
      this.connectionClosed(conn);
      this.checkPresence(r);
    }
    return r;
  }

  private sendResumed(conn: Connection, r: Recorder): void {
    const { highest_contiguous_sequence, missing_ranges } = r.coverage;
    conn.send({
      type: 'RecordingResumed',
      meeting_id: r.take.meetingId,
      audio_version: r.take.audioVersion,
      transcription_id: r.take.transcriptionId,
      max_duration_seconds: r.take.maxDurationSeconds,
      highest_contiguous_sequence,
      missing_ranges,
    });
  }

  private async isUserGone(userId: string): Promise<boolean> {
    if (this.d.localConnections(userId) > 0) return false;
    return (await this.d.countPresence(userId).catch(() => 1)) === 0;
  }

  private warn(err: unknown, msg: string): void {
    this.d.rt.log.warn({ err: (err as Error).message }, msg);
  }
}
