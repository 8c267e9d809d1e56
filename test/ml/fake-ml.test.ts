// The fake ML service against a real API: the streaming contract, its ML Limits behaviour
// (silence, gaps, bounded queue, drain), the live callbacks and the batch pass.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import { featureVector } from '../../emulators/ml/content';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let ml: FakeMl;
/** A second instance with a small queue, for the overflow test. */
let small: FakeMl;
let user: string;

const LIMITS = {
  ML_NO_AUDIO_WINDOW_SECONDS: '1',
  ML_INSIGHT_WARNING_GAP_FRAMES: '50',
  ML_TALKING_POINT_CADENCE_SEGMENTS: '2',
  ML_TALKING_POINT_CADENCE_SECONDS: '3600',
  ML_TASK_CADENCE_SEGMENTS: '3',
  ML_SEGMENT_FEATURE_MAX_PER_SPEAKER: '2',
  ML_DRAIN_TIMEOUT_SECONDS: '2',
};

beforeAll(async () => {
  api = await startApi({ ...LIMITS, PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}` });
  ml = await startFakeMl({ port: 0, coreUrl: api.url, serviceToken: api.serviceToken, config: api.config });
  small = await startFakeMl({
    port: 0,
    coreUrl: api.url,
    serviceToken: api.serviceToken,
    config: {
      ...api.config,
      ML_AUDIO_QUEUE_CAPACITY: 30,
      ML_BACKPRESSURE_QUEUE_DEPTH: 10,
      PUBSUB_TOPIC_RECORDING_FINALIZED: `unused-${randomUUID().slice(0, 8)}`,
    },
  });
  user = await api.token('ml-alice');
});

afterAll(async () => {
  await ml?.stop();
  await small?.stop();
  await api?.close();
});

/** 100 ms of 16 kHz mono PCM: a 440 Hz tone, or silence. */
function pcmFrame(seq: number, loud = true): Buffer {
  const out = Buffer.alloc(8 + 3200);
  out.writeBigUInt64BE(BigInt(seq), 0);
  for (let i = 0; i < 1600; i++)
    out.writeInt16LE(loud ? Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16000)) : 0, 8 + i * 2);
  return out;
}

async function meetingWithTranscription(): Promise<{ meetingId: string; transcriptionId: string }> {
  const m = await api.request('POST', '/meetings', {
    token: user,
    headers: { 'idempotency-key': randomUUID() },
    body: { title: 'ML test', source_type: 'recording' },
  });
  expect(m.status).toBe(201);
  const t = await api.request('POST', `/meetings/${m.body.id}/transcriptions`, {
    token: api.serviceToken,
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(t.status).toBe(201);
  const p = await api.request('PATCH', `/transcriptions/${t.body.id}`, {
    token: api.serviceToken,
    body: { status: 'transcribing' },
  });
  expect(p.status).toBe(200);
  return { meetingId: m.body.id, transcriptionId: t.body.id };
}

async function mlCall(method: string, path: string, body?: unknown, token = api.serviceToken, target = ml) {
  const res = await fetch(target.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => undefined) };
}

interface Stream {
  id: string;
  ws: WebSocket;
  messages: any[];
}

async function openStream(
  ids: { meetingId: string; transcriptionId: string },
  startSequence = 0,
  target = ml,
): Promise<Stream> {
  const res = await mlCall(
    'POST',
    '/streaming',
    {
      meeting_id: ids.meetingId,
      transcription_id: ids.transcriptionId,
      audio_version: 1,
      encoding: 'pcm_s16le',
      sample_rate: 16000,
      start_sequence: startSequence,
    },
    api.serviceToken,
    target,
  );
  expect(res.status).toBe(201);
  expect(res.body.audio_url).toMatch(/^ws:\/\/.+\/streaming\/[0-9a-f-]{36}\/audio$/);
  const ws = new WebSocket(res.body.audio_url, { headers: { authorization: `Bearer ${api.serviceToken}` } });
  const messages: any[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { id: res.body.id, ws, messages };
}

const segmentsOf = async (transcriptionId: string) =>
  (await api.request('GET', `/transcriptions/${transcriptionId}/segments?limit=200`, { token: api.serviceToken })).body
    .items as any[];

describe('fake ML streaming', () => {
  it('should post one deterministic segment per 2 s of audio, with insights at the cadence, and drain on DELETE', async () => {
    const ids = await meetingWithTranscription();
    const s = await openStream(ids);
    for (let seq = 0; seq < 60; seq++) s.ws.send(pcmFrame(seq));

    await vi.waitFor(async () => expect(await segmentsOf(ids.transcriptionId)).toHaveLength(3), { timeout: 10_000 });
    const del = await mlCall('DELETE', `/streaming/${s.id}`);
    expect(del).toEqual({ status: 200, body: { drained: true, processed: 60, dropped: 0 } });

    const segments = await segmentsOf(ids.transcriptionId);
    expect(segments.map((x) => [x.speaker_label, x.start_ms, x.end_ms])).toEqual([
      ['SPEAKER_0', 0, 2000],
      ['SPEAKER_1', 2000, 4000],
      ['SPEAKER_0', 4000, 6000],
    ]);
    expect(segments[0].feature_vector).toHaveLength(192);
    // Same speaker → near-identical direction; the other speaker → unrelated.
    const cos = (a: number[], b: number[]) => a.reduce((acc, x, i) => acc + x * b[i], 0);
    expect(cos(segments[0].feature_vector, segments[2].feature_vector)).toBeGreaterThan(0.95);
    expect(Math.abs(cos(segments[0].feature_vector, segments[1].feature_vector))).toBeLessThan(0.5);

    // Cadence 2 segments → one talking point; cadence 3 → one draft task.
    const tps = await api.request('GET', `/meetings/${ids.meetingId}/talking-points`, { token: user });
    expect(tps.body.items).toHaveLength(1);
    expect(tps.body.items[0].content).toMatch(/^Discussed: /);
    const tasks = await api.request('GET', `/tasks?meeting_id=${ids.meetingId}`, { token: user });
    expect(tasks.body.items).toHaveLength(1);
    expect(tasks.body.items[0]).toMatchObject({ source: 'system', content: expect.stringMatching(/^Follow up: /) });
    await vi.waitFor(() => expect(s.ws.readyState).toBe(WebSocket.CLOSED));
    expect(s.messages).toEqual([]);
  });

  it('should warn no_audio_detected after a silent window and post no segment for silence', async () => {
    const ids = await meetingWithTranscription();
    const s = await openStream(ids);
    for (let seq = 0; seq < 20; seq++) s.ws.send(pcmFrame(seq, false));
    await vi.waitFor(() => expect(s.messages).toHaveLength(1));
    expect(s.messages[0]).toMatchObject({
      type: 'warning',
      code: 'no_audio_detected',
      detail: { window_seconds: 1, from_sequence: 0, to_sequence: 9 },
    });
    expect((await mlCall('DELETE', `/streaming/${s.id}`)).body).toMatchObject({ drained: true, processed: 20 });
    expect(await segmentsOf(ids.transcriptionId)).toEqual([]);
  });

  it('should report insight_warning when one sequence gap reaches ML_INSIGHT_WARNING_GAP_FRAMES', async () => {
    const ids = await meetingWithTranscription();
    const s = await openStream(ids);
    s.ws.send(pcmFrame(0));
    s.ws.send(pcmFrame(50)); // a gap of 49: below the threshold
    s.ws.send(pcmFrame(101)); // a gap of 50
    await vi.waitFor(() => expect(s.messages).toHaveLength(1));
    expect(s.messages[0]).toEqual({
      type: 'warning',
      code: 'insight_warning',
      detail: { gap_frames: 50, from_sequence: 51, to_sequence: 100 },
    });
    await mlCall('DELETE', `/streaming/${s.id}`);
  });

  it('should bound its queue when hung: backpressure, dropped counts, an unanswered DELETE; then recover', async () => {
    const ids = await meetingWithTranscription();
    const s = await openStream(ids, 0, small);
    small.setMode('hang');
    try {
      for (let seq = 0; seq < 35; seq++) s.ws.send(pcmFrame(seq));
      await vi.waitFor(() =>
        expect(s.messages.filter((m) => m.type === 'dropped').reduce((n, m) => n + m.count, 0)).toBe(5),
      );
      expect(s.messages[0]).toEqual({
        type: 'warning',
        code: 'backpressure',
        detail: { queue_depth: 11, threshold: 10, capacity: 30 },
      });
      expect(s.messages.at(-1)).toMatchObject({ type: 'dropped', total: 5 });
      const hung = await fetch(`${small.url}/streaming/${s.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${api.serviceToken}` },
        signal: AbortSignal.timeout(500),
      }).catch((e) => e);
      expect(hung).toBeInstanceOf(Error);
    } finally {
      small.setMode('normal');
    }
    const del = await mlCall('DELETE', `/streaming/${s.id}`, undefined, api.serviceToken, small);
    expect(del.body).toEqual({ drained: true, processed: 30, dropped: 5 });
    expect((await segmentsOf(ids.transcriptionId)).map((x) => x.start_ms)).toEqual([0]);
  });

  it('should not repost windows a resumed session finds already stored', async () => {
    const ids = await meetingWithTranscription();
    const first = await openStream(ids);
    for (let seq = 0; seq < 20; seq++) first.ws.send(pcmFrame(seq));
    await vi.waitFor(async () => expect(await segmentsOf(ids.transcriptionId)).toHaveLength(1));
    await mlCall('DELETE', `/streaming/${first.id}`);
    const resumed = await openStream(ids, 10); // the core resends from 10
    for (let seq = 10; seq < 40; seq++) resumed.ws.send(pcmFrame(seq));
    await vi.waitFor(async () => expect(await segmentsOf(ids.transcriptionId)).toHaveLength(2));
    expect((await mlCall('DELETE', `/streaming/${resumed.id}`)).body.drained).toBe(true);
    expect((await segmentsOf(ids.transcriptionId)).map((x) => x.start_ms)).toEqual([0, 2000]);
  });

  it('should refuse sessions in refuse mode, and answer 401/404/422 as a service would', async () => {
    const ids = await meetingWithTranscription();
    const body = {
      meeting_id: ids.meetingId,
      transcription_id: ids.transcriptionId,
      audio_version: 1,
      encoding: 'pcm_s16le',
      sample_rate: 16000,
      start_sequence: 0,
    };
    ml.setMode('refuse');
    try {
      expect((await mlCall('POST', '/streaming', body)).status).toBe(503);
    } finally {
      ml.setMode('normal');
    }
    expect((await mlCall('POST', '/streaming', body, 'wrong-token-0123456789')).status).toBe(401);
    expect((await mlCall('POST', '/streaming', { ...body, encoding: 'mp3' })).status).toBe(422);
    expect((await mlCall('DELETE', `/streaming/${randomUUID()}`)).status).toBe(404);
    const created = await mlCall('POST', '/streaming', body);
    const ws = new WebSocket(created.body.audio_url); // no service token
    const err = await new Promise<Error>((resolve) => ws.once('error', resolve));
    expect(err.message).toMatch(/401/);
    await mlCall('DELETE', `/streaming/${created.body.id}`);
  });
});

describe('fake ML batch pass', () => {
  it('should claim, rebuild segments, write synthesis, headline and system tasks, then complete', async () => {
    const ids = await meetingWithTranscription();
    const s = await openStream(ids);
    for (let seq = 0; seq < 120; seq++) s.ws.send(pcmFrame(seq));
    await vi.waitFor(async () => expect(await segmentsOf(ids.transcriptionId)).toHaveLength(6), { timeout: 10_000 });
    await mlCall('DELETE', `/streaming/${s.id}`);
    const liveTasks = (await api.request('GET', `/tasks?meeting_id=${ids.meetingId}`, { token: user })).body.items;
    expect(liveTasks).toHaveLength(2);

    const message = {
      meeting_id: ids.meetingId,
      audio_version: 1,
      transcription_id: ids.transcriptionId,
      storage_path: 'x.wav',
      is_degraded: false,
      missing_ranges: [],
      attempt: 1,
    };
    await api.rt.bus.publish(api.config.PUBSUB_TOPIC_RECORDING_FINALIZED, message);
    await vi.waitFor(
      async () =>
        expect((await api.request('GET', `/transcriptions/${ids.transcriptionId}`, { token: user })).body.status).toBe(
          'completed',
        ),
      { timeout: 20_000, interval: 200 },
    );
    const history = await api.request('GET', `/transcriptions/${ids.transcriptionId}/status-history`, { token: user });
    expect(history.body.items.map((h) => h.status)).toEqual(['pending', 'transcribing', 'synthesizing', 'completed']);

    const segments = await segmentsOf(ids.transcriptionId);
    expect(segments).toHaveLength(6);
    expect(segments.every((x) => x.confidence === 0.97)).toBe(true);
    // Two feature vectors per speaker label (ML_SEGMENT_FEATURE_MAX_PER_SPEAKER=2), deterministic.
    const withVector = segments.filter((x) => x.feature_vector);
    expect(withVector.map((x) => x.speaker_label).sort()).toEqual(['SPEAKER_0', 'SPEAKER_0', 'SPEAKER_1', 'SPEAKER_1']);
    expect(withVector[0].feature_vector[0]).toBeCloseTo(
      featureVector(withVector[0].speaker_label, segments.indexOf(withVector[0]))[0],
      5,
    );

    const meeting = await api.request('GET', `/meetings/${ids.meetingId}`, { token: user });
    expect(meeting.body.headline).toBe('Good morning everyone, let us get started');
    expect(meeting.body.summary).toMatch(/^A conversation between 2 speaker\(s\) in 6 segments/);
    const topics = await api.request('GET', `/meetings/${ids.meetingId}/topics`, { token: user });
    expect(topics.body.items).toHaveLength(1);
    // The live draft tasks were replaced by re-extracted ones (every 3rd final segment).
    const tasks = (await api.request('GET', `/tasks?meeting_id=${ids.meetingId}`, { token: user })).body.items;
    expect(tasks.map((t) => t.content).sort()).toEqual([
      'Follow up: Marketing wants to move the launch to early May.',
      'Follow up: We are slightly ahead of plan on revenue.',
    ]);
    expect(tasks.map((t) => t.id)).not.toContain(liveTasks[0].id);

    // A redelivered message finds the transcription claimed and changes nothing.
    await api.rt.bus.publish(api.config.PUBSUB_TOPIC_RECORDING_FINALIZED, message);
    await vi.waitFor(
      () => expect(ml.batchPasses().filter((p) => p.transcription_id === ids.transcriptionId)).toHaveLength(2),
      { timeout: 20_000 },
    );
    expect(
      ml
        .batchPasses()
        .filter((p) => p.transcription_id === ids.transcriptionId)
        .at(-1)?.outcome,
    ).toBe('skipped');
    const after = await api.request('GET', `/transcriptions/${ids.transcriptionId}/status-history`, { token: user });
    expect(after.body.items).toHaveLength(4);
  });
});
