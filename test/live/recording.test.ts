// Recording through /ws end to end: frames → stored segments + manifest → progress; gaps,
// out-of-order and duplicate frames; the stop with its settle time; errors that keep the
// connection open; max duration; ML forwarding, health and a hung ML's drain.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { getRecording } from '@mi/lib/repositories/recordings';
import { listManifest } from '@mi/lib/repositories/manifest';
import type { FakeMl } from '../../emulators/ml/server';
import {
  TestClient,
  createMeeting,
  fileEnv,
  frameMessage,
  openTestDatabase,
  pcmFrame,
  range,
  silentFrame,
  startInstance,
  storedAudio,
  token,
  type Instance,
} from './helpers';
import { sleep } from '../support/poll';

let database: OpenedDatabase;
let core: Instance;
let ml: FakeMl;
let alice: string;

beforeAll(async () => {
  database = await openTestDatabase();
  core = await startInstance(database, fileEnv(), { ml: true });
  ml = core.ml!;
  alice = await token(core.config, 'alice');
});

afterAll(async () => {
  await core?.close();
  await database?.close();
});

async function eventTypes(meetingId: string): Promise<string[]> {
  const { rows } = await core.rt.db.query<{ event_type: string }>(
    'test.events',
    'SELECT event_type FROM recording_event_history WHERE meeting_id = $1 ORDER BY seq',
    [meetingId],
  );
  return rows.map((r) => r.event_type);
}

describe('recording', () => {
  it('should store 60 s of PCM so that the objects in manifest order are the frames in order', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    const started = await client.start(meetingId);
    expect(started).toMatchObject({
      type: 'RecordingStarted',
      meeting_id: meetingId,
      audio_version: 1,
      max_duration_seconds: 14400,
    });
    expect(started.transcription_id).toMatch(/^[0-9a-f-]{36}$/);

    for (let seq = 0; seq < 600; seq++) {
      client.frame(seq);
      if (seq % 50 === 49) await sleep(5); // paces the burst (lets the server read between batches)
    }
    await client.acked(meetingId, 599);

    // RECORDING_SEGMENT_TARGET_MS = 1000: objects of ten frames, or up to 80 while this burst
    // (faster than real time) is ahead of storage; progress at least every 50 frames stored.
    const progress = client.ofType('AudioStoredProgressEvent').filter((m) => m.meeting_id === meetingId);
    expect(progress.length).toBeGreaterThanOrEqual(Math.floor(600 / (50 + 80)));
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i].seq).toBeGreaterThan(progress[i - 1].seq);
      expect(progress[i].highest_contiguous_sequence).toBeGreaterThanOrEqual(
        progress[i - 1].highest_contiguous_sequence,
      );
    }
    const last = progress.at(-1)!;
    expect(last).toMatchObject({
      audio_version: 1,
      highest_contiguous_sequence: 599,
      frames_stored: 600,
      bytes_stored: 600 * 3200,
    });
    expect(last.event_id).toMatch(/^[0-9a-f-]{36}$/);

    // Every progress event reported only frames already stored.
    const stored = await storedAudio(core, meetingId, 1);
    expect(stored.sequences).toEqual(range(0, 599));
    expect(stored.bytes.equals(Buffer.concat(range(0, 599).map(pcmFrame)))).toBe(true);
    const sizes = stored.rows.map((r) => r.end_sequence - r.start_sequence + 1);
    expect(sizes.every((n, i) => n <= 80 && (n >= 10 || i === sizes.length - 1))).toBe(true);
    expect(stored.rows.every((r) => r.crc32c && r.object_generation && r.sha256 === null)).toBe(true);

    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({
      type: 'RecordingStopped',
      audio_version: 1,
      reason: 'user',
      highest_contiguous_sequence: 599,
      missing_ranges: [],
    });
    expect(Date.parse(stopped.gap_upload_deadline)).toBeGreaterThan(Date.now() + 1700_000);
    const rec = await getRecording(core.rt.db, meetingId, 1);
    expect(rec).toMatchObject({ state: 'stopped', stop_reason: 'user', owner_instance: null });
    const { rows } = await core.rt.db.query('test.tx', 'SELECT status FROM transcription WHERE id = $1', [
      started.transcription_id,
    ]);
    expect(rows[0].status).toBe('transcribing');
    expect(await eventTypes(meetingId)).toEqual(
      expect.arrayContaining(['recording_started', 'stop_requested', 'ml_drained', 'recording_stopped']),
    );

    // The audio reached the ML service too.
    const session = ml.sessions().find((s) => s.init.meeting_id === meetingId);
    expect(session === undefined || session.processed + session.dropped > 0).toBe(true);
    client.close();
  });

  it("should acknowledge the stream's tail (a short last segment) within the segment target, not at the progress interval", async () => {
    // Progress every 20 frames (two segments) and, by interval, only every 60 s: the 25th frame's
    // acknowledgement may come only from the tail rule.
    const quiet = await startInstance(database, {
      ...fileEnv(),
      RECORDING_PROGRESS_EVERY_FRAMES: '20',
      RECORDING_PROGRESS_INTERVAL_SECONDS: '60',
    });
    try {
      const meetingId = await createMeeting(quiet, alice);
      const client = await TestClient.connect(quiet.wsUrl, alice);
      await client.start(meetingId);
      for (let seq = 0; seq < 25; seq++) {
        client.frame(seq);
        await sleep(10); // paces the sender
      }
      // Acknowledged by the durable write (RECORDING_SEGMENT_TARGET_MS, 1 s), not the 60 s interval:
      // waited for at most half of that interval.
      await client.acked(meetingId, 24, 30_000);
      const progress = client.ofType('AudioStoredProgressEvent').filter((m) => m.meeting_id === meetingId);
      expect(progress.at(-1)).toMatchObject({ highest_contiguous_sequence: 24, frames_stored: 25 });
      client.close();
    } finally {
      await quiet.close();
    }
  });

  it('should report skipped frames as missing ranges and acknowledge only the contiguous part', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    const sent = range(0, 49).filter((s) => !(s >= 10 && s <= 14) && s !== 30);
    for (const seq of sent) client.frame(seq);
    // Every frame sent is stored: no later progress could acknowledge more than before.
    await client.waitFor({ type: 'AudioStoredProgressEvent', meeting_id: meetingId, frames_stored: sent.length });
    const progress = client.ofType('AudioStoredProgressEvent').filter((m) => m.meeting_id === meetingId);
    expect(progress.every((m) => m.highest_contiguous_sequence <= 9)).toBe(true);

    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({
      highest_contiguous_sequence: 9,
      missing_ranges: [
        [10, 14],
        [30, 30],
      ],
    });
    const stored = await storedAudio(core, meetingId, 1);
    expect(stored.sequences).toEqual(sent);
    expect(stored.bytes.equals(Buffer.concat(sent.map(pcmFrame)))).toBe(true);
    client.close();
  });

  it('should store out-of-order and repeated frames once each, in sequence order', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    const order = [
      3, 1, 0, 2, 2, 7, 5, 4, 6, 0, 9, 8, 12, 10, 11, 11, 14, 13, 15, 19, 18, 17, 16, 3, 24, 20, 21, 23, 22,
    ];
    for (const seq of order) client.frame(seq);
    await client.acked(meetingId, 24);
    for (const seq of [5, 24, 0]) client.frame(seq); // resent after they were acknowledged
    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({ highest_contiguous_sequence: 24, missing_ranges: [] });
    const stored = await storedAudio(core, meetingId, 1);
    expect(stored.sequences).toEqual(range(0, 24));
    expect(stored.bytes.equals(Buffer.concat(range(0, 24).map(pcmFrame)))).toBe(true);
    client.close();
  });

  it('should keep taking frames during the settle time after a stop, then refuse them', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    for (const seq of range(0, 9)) client.frame(seq);
    client.send({ type: 'StopRecordingCommand', meeting_id: meetingId });
    // Inside RECORDING_STOP_SETTLE_MS (200): polled often, the window is short.
    await vi.waitFor(() => expect([...core.live.recorders.values()].map((r) => r.state)).toContain('settling'), {
      timeout: 20_000,
      interval: 5,
    });
    for (const seq of range(10, 14)) client.frame(seq);
    const stopped = await client.waitFor({ type: 'RecordingStopped' });
    expect(stopped).toMatchObject({ reason: 'user', highest_contiguous_sequence: 14, missing_ranges: [] });
    expect((await storedAudio(core, meetingId, 1)).sequences).toEqual(range(0, 14));

    const from = client.mark(); // an answer to this frame, not an earlier one
    client.frame(15);
    expect(await client.waitFor({ type: 'error', ref: 'audio' }, { from })).toMatchObject({
      code: 'no_recording',
    });
    client.close();
  });

  it('should stop a take whose stop began while the database was out of connections, once it has one again', async () => {
    const lines: { message?: string; step?: string }[] = [];
    const inst = await startInstance(
      database,
      { ...fileEnv(), LOG_LEVEL: 'warn' },
      { logDestination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    );
    const held: { release(): void }[] = [];
    try {
      const meetingId = await createMeeting(inst, alice);
      const client = await TestClient.connect(inst.wsUrl, alice);
      await client.start(meetingId);
      for (const seq of range(0, 9)) client.frame(seq);
      await client.acked(meetingId, 9);
      // Every connection of the pool held: the stop's first step waits, then fails (connect timeout).
      const { pool } = inst.served;
      for (let i = 0; i < (pool.options.max ?? 10); i++) held.push(await pool.connect());
      client.send({ type: 'StopRecordingCommand', meeting_id: meetingId });
      await vi.waitFor(() => expect(lines.map((l) => l.message)).toContain('stop step failed; retrying'), {
        timeout: 30_000,
        interval: 100,
      });
      for (const c of held.splice(0)) c.release();
      const answer = await client.waitFor(
        { type: (t) => t === 'RecordingStopped' || t === 'error' },
        { timeoutMs: 60_000 },
      );
      expect(answer).toMatchObject({ type: 'RecordingStopped', highest_contiguous_sequence: 9, missing_ranges: [] });
      expect(lines.find((l) => l.message === 'stop step failed; retrying')).toMatchObject({ step: 'begin' });
      expect((await storedAudio(inst, meetingId, 1)).sequences).toEqual(range(0, 9));
      client.close();
    } finally {
      for (const c of held) c.release();
      await inst.close();
    }
  });

  it('should start a new audio_version on a meeting whose take was stopped', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    client.frame(0);
    await client.stop(meetingId);
    const second = await client.start(meetingId);
    expect(second).toMatchObject({ type: 'RecordingStarted', audio_version: 2 });
    client.frame(0, pcmFrame(1000));
    const stopped = await client.stop(meetingId);
    expect(stopped).toMatchObject({ audio_version: 2, highest_contiguous_sequence: 0 });
    expect((await storedAudio(core, meetingId, 2)).bytes.equals(pcmFrame(1000))).toBe(true);
    expect((await storedAudio(core, meetingId, 1)).bytes.equals(pcmFrame(0))).toBe(true);
    client.close();
  });
});

describe('errors keep the connection open', () => {
  it('should answer frames without a recording, oversize and malformed frames, bad commands and foreign meetings with error messages', async () => {
    const client = await TestClient.connect(core.wsUrl, alice);
    const errorFor = async (act: () => void, ref: string | null) => {
      const from = client.mark();
      act();
      return client.waitFor({ type: 'error', ref }, { from });
    };
    expect(await errorFor(() => client.frame(0), 'audio')).toMatchObject({ code: 'no_recording' });
    expect(await errorFor(() => client.ws.send(Buffer.from([1, 2, 3])), 'audio')).toMatchObject({ code: 'bad_frame' });
    expect(await errorFor(() => client.send({ type: 'Nonsense' }), 'Nonsense')).toMatchObject({ code: 'bad_message' });
    expect(await errorFor(() => client.ws.send('{not json'), null)).toMatchObject({ code: 'bad_message' });

    const unknown = await client.start('00000000-0000-4000-8000-000000000000');
    expect(unknown).toMatchObject({ type: 'error', code: 'meeting_not_found', ref: 'StartRecordingCommand' });
    const bobs = await createMeeting(core, await token(core.config, 'bob'));
    expect(await client.start(bobs)).toMatchObject({ type: 'error', code: 'meeting_not_found' });
    const upload = await createMeeting(core, alice, 'upload');
    expect(await client.start(upload)).toMatchObject({ type: 'error', code: 'not_a_recording_meeting' });

    const meetingId = await createMeeting(core, alice);
    expect(await client.start(meetingId)).toMatchObject({ type: 'RecordingStarted' });
    const oversize = Buffer.alloc(core.config.LIVE_MAX_FRAME_BYTES + 1);
    expect(await errorFor(() => client.ws.send(frameMessage(0, oversize)), 'audio')).toMatchObject({
      code: 'frame_too_large',
    });
    const other = await createMeeting(core, alice);
    const second = await errorFor(
      () => client.send({ type: 'StartRecordingCommand', meeting_id: other, encoding: 'pcm_s16le' }),
      'StartRecordingCommand',
    );
    expect(second).toMatchObject({ code: 'recording_in_progress' });

    // Another connection cannot start a second take while this one is open.
    const tab = await TestClient.connect(core.wsUrl, alice);
    expect(await tab.start(meetingId)).toMatchObject({ type: 'error', code: 'recording_open' });
    tab.close();

    // Still up: the recording works.
    client.frame(0);
    expect(await client.stop(meetingId)).toMatchObject({ highest_contiguous_sequence: 0 });
    client.close();
  });
});

describe('max duration', () => {
  it('should let the start command lower the ceiling, warn before it, and stop with reason max_duration', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    const started = await client.start(meetingId, { max_duration_seconds: 2 });
    expect(started.max_duration_seconds).toBe(2);
    client.frame(0);
    const warning = await client.waitFor({ type: 'RecordingDurationWarning' }, { timeoutMs: 5000 });
    expect(warning).toMatchObject({ meeting_id: meetingId, max_duration_seconds: 2 });
    const stopped = await client.waitFor({ type: 'RecordingStopped' }, { timeoutMs: 15_000 });
    expect(stopped).toMatchObject({ reason: 'max_duration', highest_contiguous_sequence: 0 });
    expect(await eventTypes(meetingId)).toEqual(expect.arrayContaining(['duration_warning', 'recording_stopped']));
    client.close();
  });

  it('should store nothing at or past the ceiling (max_duration_seconds × 10 frames), the settle time included', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId, { max_duration_seconds: 3 });
    // The frame at the ceiling first: its answer must come while the take still runs (the
    // duration's timer starts with the take; a loaded machine once used up 2 s before it).
    const from = client.mark();
    client.frame(30);
    expect(await client.waitFor({ type: 'error' }, { timeoutMs: 5_000, from })).toMatchObject({
      code: 'sequence_out_of_range',
      ref: 'audio',
    });
    for (const seq of range(0, 29)) client.frame(seq);
    for (const seq of range(31, 41)) client.frame(seq); // more past the ceiling, also while the stop settles
    const stopped = await client.waitFor({ type: 'RecordingStopped' }, { timeoutMs: 15_000 });
    expect(stopped).toMatchObject({ reason: 'max_duration', highest_contiguous_sequence: 29, missing_ranges: [] });
    const rows = await listManifest(core.rt.db, meetingId, 1);
    expect(Math.max(...rows.map((r) => r.end_sequence))).toBe(29);
    client.close();
  });

  it('should never raise the ceiling above RECORDING_MAX_DURATION_SECONDS', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    const started = await client.start(meetingId, { max_duration_seconds: 10 * 14400 });
    expect(started.max_duration_seconds).toBe(14400);
    expect((await getRecording(core.rt.db, meetingId, 1))?.max_duration_seconds).toBe(14400);
    await client.stop(meetingId);
    client.close();
  });
});

describe('ML service', () => {
  it('should forward ML warnings to the client as RecordingHealth and into the recording history', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    for (const seq of range(0, 19)) client.frame(seq, silentFrame()); // ML_NO_AUDIO_WINDOW_SECONDS = 1
    const health = await client.waitFor({ type: 'RecordingHealth', code: 'no_audio_detected' });
    expect(health).toMatchObject({ meeting_id: meetingId, audio_version: 1, source: 'ml' });
    await client.stop(meetingId);
    expect(await eventTypes(meetingId)).toContain('no_audio_detected');
    client.close();
  });

  it('should finish a stop within the drain bound when the ML hangs, with every frame stored', async () => {
    const meetingId = await createMeeting(core, alice);
    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    await vi.waitFor(
      () => expect(ml.sessions().some((s) => s.init.meeting_id === meetingId && s.socket !== null)).toBe(true),
      { timeout: 20_000 },
    );
    ml.setMode('hang');
    try {
      for (const seq of range(0, 29)) client.frame(seq);
      const t0 = Date.now();
      const stopped = await client.stop(meetingId);
      const took = Date.now() - t0;
      expect(took).toBeGreaterThanOrEqual(core.config.RECORDING_ML_DRAIN_TIMEOUT_SECONDS * 1000);
      // No upper bound here: the stop answering at all (the drain hangs for ever) shows it is bounded.
      expect(stopped).toMatchObject({ highest_contiguous_sequence: 29, missing_ranges: [] });
      expect(await eventTypes(meetingId)).toContain('ml_drain_timeout');
    } finally {
      ml.setMode('normal');
    }
    client.close();
  });

  it('should keep storing audio when the ML service is unreachable, and say so', async () => {
    const instance = await startInstance(
      database,
      {
        ...fileEnv(),
        PUBSUB_TOPIC_EVENTS: core.config.PUBSUB_TOPIC_EVENTS,
        STORAGE_BUCKET: core.config.STORAGE_BUCKET,
      },
      { mlUrl: 'http://127.0.0.1:9' },
    );
    try {
      const meetingId = await createMeeting(instance, alice);
      const client = await TestClient.connect(instance.wsUrl, alice);
      await client.start(meetingId);
      for (const seq of range(0, 19)) client.frame(seq);
      expect(await client.waitFor({ type: 'RecordingHealth', code: 'ml_unavailable' })).toMatchObject({
        source: 'core',
      });
      await client.acked(meetingId, 19);
      const stopped = await client.stop(meetingId);
      expect(stopped).toMatchObject({ highest_contiguous_sequence: 19 });
      expect((await storedAudio(instance, meetingId, 1)).sequences).toEqual(range(0, 19));
      client.close();
    } finally {
      await instance.close();
    }
  });
});
