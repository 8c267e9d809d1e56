// An uploaded audio file gets its transcript from the ML batch pass, as a finalized take does: the
// upload offers it (`recording.finalized`, source `upload`, seen on the Pub/Sub emulator), the
// stand-in ML claims it, reads the uploaded object and writes the transcript; a pass that dies is
// re-offered by the sweep; an upload while the pass is unfinished is refused and changes nothing.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { mlBatchSubscription } from '@mi/lib/ml/contract';
import { startFakeMl, type FakeMl } from '../../emulators/ml/server';
import { phraseOf } from '../../emulators/ml/content';
import { runSweep } from '../../functions/sweep';
import { uploadMeetingAudio } from '@mi/lib/use-cases/audio';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { startApi, type ApiHarness } from '../harness';

let api: ApiHarness;
let ml: FakeMl;
let alice: string;
const finalized: BusMessage[] = [];
let subscription: { close(): Promise<void> } | undefined;
/** Passes (by meeting and attempt) that wait after their claim until the test lets them go on. */
const held = new Map<string, Promise<void>>();

beforeAll(async () => {
  api = await startApi({ PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}` });
  alice = await api.token('upload-alice');
  const topic = api.config.PUBSUB_TOPIC_RECORDING_FINALIZED;
  await api.rt.bus.ensureTopic(topic);
  subscription = await api.rt.bus.subscribeInstance(topic, `observer-${randomUUID().slice(0, 8)}`, (m) => {
    finalized.push(m);
  });
  await api.rt.bus.ensureQueue(topic, mlBatchSubscription(topic));
  ml = await startFakeMl({
    port: 0,
    coreUrl: api.url,
    serviceToken: api.serviceToken,
    config: api.config,
    batchPause: async (msg) => held.get(`${msg.meeting_id}:${msg.attempt}`),
  });
});

afterAll(async () => {
  await ml?.stop();
  await subscription?.close();
  await api?.close();
});

/** A mono 16 kHz 16-bit WAV of `seconds` (a quiet tone). */
function wav(seconds: number): Buffer {
  const data = Buffer.alloc(seconds * 32_000);
  for (let i = 0; i < data.length / 2; i++) data.writeInt16LE(Math.round(3000 * Math.sin(i / 8)), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(16_000, 24);
  h.writeUInt32LE(32_000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

async function uploadMeeting(): Promise<string> {
  const res = await api.request('POST', '/meetings', {
    token: alice,
    headers: { 'idempotency-key': randomUUID() },
    body: { title: 'Uploaded', source_type: 'upload' },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const upload = (id: string, bytes: Buffer, type = 'audio/wav') =>
  api.request('PUT', `/meetings/${id}/audio`, {
    token: alice,
    raw: new Uint8Array(bytes),
    headers: { 'content-type': type },
  });
const passesOf = async (id: string) =>
  (await api.request('GET', `/meetings/${id}/transcriptions`, { token: alice })).body.items as {
    id: string;
    status: string;
    status_message: string | null;
  }[];
const historyOf = async (t: string) =>
  (await api.request('GET', `/transcriptions/${t}/status-history?limit=200`, { token: alice })).body.items.map(
    (h: any) => `${h.status}: ${h.status_message ?? ''}`,
  ) as string[];
const segmentsOf = async (t: string) =>
  (await api.request('GET', `/transcriptions/${t}/segments?limit=200&order=asc`, { token: alice })).body.items as {
    text: string;
    start_ms: number;
    end_ms: number;
  }[];
const offersOf = (t: string) => finalized.map((m) => m.data as any).filter((m) => m.transcription_id === t);
/** Polls until the meeting's only (or newest) pass reaches `status`; its id. */
async function passReaches(id: string, status: string): Promise<string> {
  let tid = '';
  await vi.waitFor(
    async () => {
      const passes = await passesOf(id);
      tid = passes.at(-1)!.id;
      expect(passes.at(-1)!.status).toBe(status);
    },
    { timeout: 30_000, interval: 200 },
  );
  return tid;
}

describe('the batch pass of an uploaded file', () => {
  it('should offer an upload to the ML, which writes its transcript', async () => {
    const id = await uploadMeeting();
    const up = await upload(id, wav(7));
    expect(up.status, up.text).toBe(201);
    const t = await passReaches(id, 'completed');
    await vi.waitFor(() =>
      expect(offersOf(t)).toEqual([
        {
          meeting_id: id,
          audio_version: 1,
          transcription_id: t,
          storage_path: up.body.storage_path,
          is_degraded: false,
          missing_ranges: [],
          attempt: 1,
          source: 'upload',
        },
      ]),
    );
    // 7 s heard as four 2 s windows, the last one second long.
    expect(await segmentsOf(t)).toMatchObject([
      { text: phraseOf(0), start_ms: 0, end_ms: 2000 },
      { text: phraseOf(1), start_ms: 2000, end_ms: 4000 },
      { text: phraseOf(2), start_ms: 4000, end_ms: 6000 },
      { text: phraseOf(3), start_ms: 6000, end_ms: 7000 },
    ]);
    const synthesis = await api.request('GET', `/meetings/${id}`, { token: alice });
    expect(synthesis.body.summary).toContain('over 7.0 s of audio');
    expect(await historyOf(t)).toEqual([
      'pending: ',
      'transcribing: batch pass offered',
      'synthesizing: batch pass started',
      'completed: batch pass completed',
    ]);
  });

  it('should refuse another upload while the pass is unfinished (409, nothing changed), and take one once it ended', async () => {
    const id = await uploadMeeting();
    const first = wav(3);
    // The first pass holds after its claim until `go`.
    let go!: () => void;
    const waiting = new Promise<void>((resolve) => {
      go = resolve;
    });
    held.set(`${id}:1`, waiting);
    expect((await upload(id, first)).status).toBe(201);
    const t = (await passesOf(id))[0].id;
    const refused = await upload(id, wav(5));
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body.detail).toMatch(/being transcribed/);
    // Nothing changed: one object (the first), one pass, the first file's bytes served.
    expect(await api.rt.store.list(`uploads/${id}/`)).toHaveLength(1);
    expect(await passesOf(id)).toHaveLength(1);
    const links = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    expect(Buffer.from(await (await fetch(links.body.url)).arrayBuffer()).equals(first)).toBe(true);

    go();
    await passReaches(id, 'completed');
    const again = await upload(id, wav(5));
    expect(again.status, again.text).toBe(200);
    const second = await passReaches(id, 'completed');
    expect(second).not.toBe(t);
    expect((await segmentsOf(second)).map((s) => s.end_ms)).toEqual([2000, 4000, 5000]);
  });

  it('should re-offer the upload of a pass that died after its claim, and the next pass writes the transcript', async () => {
    const id = await uploadMeeting();
    // The pass of attempt 1 never goes on after its claim (it died); the test lets it go at the end.
    let revive!: () => void;
    const dead = new Promise<void>((resolve) => {
      revive = resolve;
    });
    held.set(`${id}:1`, dead);
    expect((await upload(id, wav(4))).status).toBe(201);
    const t = await passReaches(id, 'synthesizing');
    await api.rt.db.query(
      'test.expire_claim',
      "UPDATE transcription SET claim_expires_at = now() - interval '1 second' WHERE id = $1",
      [t],
    );
    await runSweep(api.sweeper);
    await passReaches(id, 'completed');
    await vi.waitFor(() => expect(offersOf(t).map((m) => m.attempt)).toEqual([1, 2]), { timeout: 15_000 });
    expect(offersOf(t)[1]).toMatchObject({ source: 'upload', storage_path: offersOf(t)[0].storage_path });
    expect(await historyOf(t)).toEqual([
      'pending: ',
      'transcribing: batch pass offered',
      'synthesizing: batch pass started',
      'transcribing: batch claim expired',
      'synthesizing: batch pass started',
      'completed: batch pass completed',
    ]);
    expect((await segmentsOf(t)).map((s) => s.text)).toEqual([phraseOf(0), phraseOf(1)]);
    revive(); // its writes carry a claim that is no longer current: refused (test/ml/batch-lease.test.ts)
  });

  it('should end the pass failed for audio the ML cannot read, and take a good file after it', async () => {
    const id = await uploadMeeting();
    expect((await upload(id, Buffer.from('not a wav file at all'))).status).toBe(201);
    const t = await passReaches(id, 'failed');
    expect((await passesOf(id))[0].status_message).toBe('batch pass failed');
    expect(await segmentsOf(t)).toEqual([]);
    expect((await upload(id, wav(2))).status).toBe(200);
    const next = await passReaches(id, 'completed');
    expect((await segmentsOf(next)).map((s) => s.text)).toEqual([phraseOf(0)]);
  });

  it('should end the pass failed and answer unavailable when it cannot be offered, the next upload starting one', async () => {
    const id = await uploadMeeting();
    const userId = (await api.request('GET', '/me', { token: alice })).body.id;
    const down = {
      ...api.rt,
      bus: {
        ...api.rt.bus,
        publish: async () => {
          throw new Error('Pub/Sub is down');
        },
      },
    };
    const input = { meetingId: id, contentType: 'audio/wav', maxBytes: 1 << 20, body: Readable.from([wav(2)]) };
    await expect(runWorkflow(down, { userId }, uploadMeetingAudio, input)).rejects.toMatchObject({
      code: 'unavailable',
    });
    expect(await passesOf(id)).toMatchObject([
      { status: 'failed', status_message: 'the batch pass could not be offered; upload the file again' },
    ]);
    expect((await upload(id, wav(2))).status).toBe(200);
    expect(await passReaches(id, 'completed')).not.toBe((await passesOf(id))[0].id);
  });

  it('should offer from the sweep an upload whose request died between storing it and offering it', async () => {
    const id = await uploadMeeting();
    expect((await upload(id, Buffer.from('unreadable'))).status).toBe(201);
    const t = await passReaches(id, 'failed');
    // As a request that died after the file and its pending transcription committed leaves it.
    await api.rt.db.query(
      'test.unoffered',
      "UPDATE transcription SET status = 'pending', updated_at = now() - interval '61 seconds' WHERE id = $1",
      [t],
    );
    await runSweep(api.sweeper);
    await passReaches(id, 'failed'); // offered again: the same unreadable file
    expect((await historyOf(t)).slice(-3)).toEqual([
      'transcribing: batch pass offered',
      'synthesizing: batch pass started',
      'failed: batch pass failed',
    ]);
    await vi.waitFor(() => expect(offersOf(t).map((m) => m.attempt)).toEqual([1, 1]), { timeout: 15_000 });
  });
});
