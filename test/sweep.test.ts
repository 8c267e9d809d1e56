// The sweep against a real API database, the GCS emulator, Pub/Sub and Firestore emulators:
// finalize (compose + WAV header + recording.finalized), exactly once, degraded takes, stale
// claims, outbox republish, orphaned takes and the HTTP handler.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCoordination, type Coordination } from '@mi/lib/adapters/coordination';
import type { Bus, BusMessage } from '@mi/lib/adapters/bus';
import { gapObjectName, segmentObjectName, sha256Hex } from '@mi/lib/objects/take-objects';
import { listManifest } from '@mi/lib/repositories/manifest';
import { getRecording, recordingLeaseKey } from '@mi/lib/repositories/recordings';
import { runSweep, sweepHandler } from '../functions/sweep';
import { ensurePartitions, listPartitions, PARTITION_DAYS_AHEAD } from '@mi/lib/repositories/partitions';
import {
  deleteExpiredEvents,
  DELETE_EXPIRED_IDEMPOTENCY_RECORDS,
  RETENTION_BATCH_ROWS,
} from '@mi/lib/repositories/retention';
import { listenToEvents, startApi, type ApiHarness } from './harness';
import { recordingFinalizedSchema } from '@mi/lib/ml/documents';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import {
  createTake,
  expireGapDeadline,
  framesBytes,
  stopTake,
  storeLiveSegment,
  type Take,
} from './recording-fixtures';

let api: ApiHarness;
let alice: string;
let aliceId: string;
let coordination: Coordination;
const finalized: BusMessage[] = [];
const events: BusMessage[] = [];
const subscriptions: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  api = await startApi({
    PUBSUB_TOPIC_RECORDING_FINALIZED: `finalized-${randomUUID().slice(0, 8)}`,
    RECORDING_GAP_SWEEP_INTERVAL_SECONDS: '0.4',
  });
  alice = await api.token('sweep-alice');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
  subscriptions.push(
    await api.rt.bus.subscribeInstance(
      api.config.PUBSUB_TOPIC_RECORDING_FINALIZED,
      'sweep-test',
      (m) => void finalized.push(m),
    ),
  );
  subscriptions.push(await listenToEvents(api.rt, aliceId, (m) => void events.push(m)));
  coordination = createCoordination({
    projectId: api.config.GOOGLE_CLOUD_PROJECT,
    emulatorHost: api.config.FIRESTORE_EMULATOR_HOST,
    collectionPrefix: `sweep-${randomUUID().slice(0, 8)}-`,
  });
});

afterAll(async () => {
  for (const s of subscriptions) await s.close();
  await coordination?.close();
  await api?.close();
});

const messagesFor = (t: Take) => finalized.filter((m) => (m.data as any).meeting_id === t.meetingId);
// What the ML team builds against: the published JSON Schema of the message (decisions.md section 7).
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const publishedSchema = ajv.compile(recordingFinalizedSchema());
const schemaErrors = (data: unknown) => (publishedSchema(data) ? [] : publishedSchema.errors);
const eventsOf = async (t: Take) =>
  (await api.request('GET', `/meetings/${t.meetingId}/recording/events?limit=200`, { token: alice })).body.items.map(
    (e) => e.event_type,
  ) as string[];

/** A stopped take whose frames 0..frames-1 are stored in segments of `per` frames, written out of order. */
async function completeTake(frames: number, per: number): Promise<Take> {
  const take = await createTake(api, alice);
  const starts = Array.from({ length: frames / per }, (_, i) => i * per).reverse();
  for (const s of starts) await storeLiveSegment(api, take, s, s + per - 1);
  await stopTake(api, take);
  return take;
}

/** The client's gap upload of frames start..end of the take's first version. */
const uploadGap = (take: Take, start: number, end: number) =>
  api.request('PUT', `/meetings/${take.meetingId}/recording/audio/${start}-${end}?audio_version=1`, {
    token: alice,
    raw: framesBytes(start, end),
    headers: { 'content-type': 'application/octet-stream' },
  });

function parseWav(bytes: Buffer) {
  return {
    riff: bytes.toString('ascii', 0, 4),
    riffSize: bytes.readUInt32LE(4),
    wave: bytes.toString('ascii', 8, 12),
    format: bytes.readUInt16LE(20),
    channels: bytes.readUInt16LE(22),
    sampleRate: bytes.readUInt32LE(24),
    byteRate: bytes.readUInt32LE(28),
    bits: bytes.readUInt16LE(34),
    dataTag: bytes.toString('ascii', 36, 40),
    dataSize: bytes.readUInt32LE(40),
    data: bytes.subarray(44),
  };
}

describe('runSweep: finalize', () => {
  it('should compose the frames in order behind a correct WAV header, publish recording.finalized once and record it', async () => {
    const take = await completeTake(80, 2); // 40 segments: more than one compose call
    const open = await createTake(api, alice);
    await storeLiveSegment(api, open, 0, 9);

    const counts = await runSweep(api.sweeper);
    expect(counts).toMatchObject({ finalized: 1, degraded: 0, failed: 0 });

    const file = await api.rt.db.query(
      'test.audio_file',
      'SELECT storage_path FROM meeting_audio_file WHERE meeting_id = $1',
      [take.meetingId],
    );
    const path = file.rows[0].storage_path as string;
    expect(path).toBe(`recordings/${take.meetingId}/v1/audio.wav`);
    const wav = parseWav(await api.rt.store.readAll(path));
    expect(wav).toMatchObject({
      riff: 'RIFF',
      riffSize: 36 + 8000,
      wave: 'WAVE',
      format: 1,
      channels: 1,
      sampleRate: 500,
      byteRate: 1000,
      bits: 16,
      dataTag: 'data',
      dataSize: 8000,
    });
    expect(wav.data.equals(framesBytes(0, 79))).toBe(true);
    expect((await api.rt.store.stat(path))?.contentType).toBe('audio/wav');
    expect(await api.rt.store.list(`recordings/${take.meetingId}/v1/header`)).toEqual([]);

    expect((await getRecording(api.rt.db, take.meetingId, 1))?.state).toBe('finalized');
    expect((await getRecording(api.rt.db, open.meetingId, 1))?.state).toBe('recording');
    expect((await eventsOf(take))[0]).toBe('finalized');
    await vi.waitFor(() => expect(messagesFor(take)).toHaveLength(1), { timeout: 10_000 });
    expect(messagesFor(take)[0].data).toEqual({
      meeting_id: take.meetingId,
      audio_version: 1,
      transcription_id: take.transcriptionId,
      storage_path: path,
      is_degraded: false,
      missing_ranges: [],
      attempt: 1,
    });
    expect(schemaErrors(messagesFor(take)[0].data)).toEqual([]);
    await vi.waitFor(() =>
      expect(
        events.some(
          (e) => (e.data as any).body?.entity === 'recording' && (e.data as any).body?.meeting_id === take.meetingId,
        ),
      ).toBe(true),
    );

    expect((await runSweep(api.sweeper)).finalized).toBe(0);
    const t = await api.request('GET', `/transcriptions/${take.transcriptionId}`, { token: alice });
    expect(t.body.is_degraded).toBe(false);
    await api.rt.db.query('test.cleanup', 'DELETE FROM recording WHERE meeting_id = $1', [open.meetingId]);
  });

  it('should wait for a gap until it is uploaded, then finalize before the deadline', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    expect((await runSweep(api.sweeper)).finalized).toBe(0);
    const put = await uploadGap(take, 10, 19);
    expect(put.status).toBe(201);
    expect((await runSweep(api.sweeper)).finalized).toBe(1);
    const path = `recordings/${take.meetingId}/v1/audio.wav`;
    expect(parseWav(await api.rt.store.readAll(path)).data.equals(framesBytes(0, 29))).toBe(true);
  });

  it('should keep a take the server stopped open for its client until the deadline, taking the tail it uploads', async () => {
    for (const reason of ['connection_closed', 'max_duration'] as const) {
      const take = await createTake(api, alice);
      await storeLiveSegment(api, take, 0, 9); // no hole, but the client may hold frames the server never saw
      await stopTake(api, take, 1800, reason);
      expect((await runSweep(api.sweeper)).finalized).toBe(0);
      const put = await uploadGap(take, 10, 19);
      expect(put.status).toBe(201);
      expect((await runSweep(api.sweeper)).finalized).toBe(0);
      await expireGapDeadline(api, take);
      expect(await runSweep(api.sweeper)).toMatchObject({ finalized: 1, degraded: 0 });
      const path = `recordings/${take.meetingId}/v1/audio.wav`;
      expect(parseWav(await api.rt.store.readAll(path)).data.equals(framesBytes(0, 19))).toBe(true);
    }
  });

  it('should delete the objects of a finalized take that no manifest row references, and keep the rest', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    const gap = await uploadGap(take, 10, 19);
    expect(gap.status).toBe(201);
    // Left by writers that died between their object and their row.
    const strays = [
      segmentObjectName(take, 30, 39),
      gapObjectName(take.meetingId, 1, 30, 39, sha256Hex(framesBytes(30, 39))),
    ];
    for (const name of strays) await api.rt.store.write(name, framesBytes(30, 39));

    expect((await runSweep(api.sweeper)).finalized).toBe(1);
    const left = (await api.rt.store.list(`recordings/${take.meetingId}/`)).map((o) => o.name).sort();
    const referenced = (await listManifest(api.rt.db, take.meetingId, 1)).map((r) => r.object_name);
    expect(left).toEqual([...referenced, `recordings/${take.meetingId}/v1/audio.wav`].sort());
    expect(
      parseWav(await api.rt.store.readAll(`recordings/${take.meetingId}/v1/audio.wav`)).data.equals(framesBytes(0, 29)),
    ).toBe(true);
  });

  it('should finalize a take past its deadline with gaps as degraded', async () => {
    const take = await createTake(api, alice);
    await storeLiveSegment(api, take, 0, 9);
    await storeLiveSegment(api, take, 20, 29);
    await stopTake(api, take);
    await expireGapDeadline(api, take);
    expect(await runSweep(api.sweeper)).toMatchObject({ finalized: 1, degraded: 1 });

    const wav = parseWav(await api.rt.store.readAll(`recordings/${take.meetingId}/v1/audio.wav`));
    expect(wav.dataSize).toBe(2000);
    expect(wav.data.equals(Buffer.concat([framesBytes(0, 9), framesBytes(20, 29)]))).toBe(true);
    const t = await api.request('GET', `/transcriptions/${take.transcriptionId}`, { token: alice });
    expect(t.body.is_degraded).toBe(true);
    await vi.waitFor(() => expect(messagesFor(take)).toHaveLength(1), { timeout: 10_000 });
    expect(messagesFor(take)[0].data).toMatchObject({ is_degraded: true, missing_ranges: [[10, 19]] });
    expect(schemaErrors(messagesFor(take)[0].data)).toEqual([]);
  });

  it('should finalize each take exactly once when two sweeps run at once', async () => {
    await runSweep(api.sweeper); // nothing else due
    const takes = [await completeTake(10, 5), await completeTake(10, 5), await completeTake(10, 5)];
    // The sweeps' own publishes, counted as they leave (a duplicate delivery would leave no later
    // marker to wait for: the topic keeps no order).
    const offered: unknown[] = [];
    const bus = api.sweeper.bus;
    const counted: Bus = Object.create(bus, {
      publish: {
        value: (...args: Parameters<Bus['publish']>) => {
          if (args[0] === api.config.PUBSUB_TOPIC_RECORDING_FINALIZED) offered.push(args[1]);
          return bus.publish(...args);
        },
      },
    });
    const sweeper = { ...api.sweeper, bus: counted };
    const [a, b] = await Promise.all([runSweep(sweeper), runSweep(sweeper)]);
    expect(a.finalized + b.finalized).toBe(3);
    for (const take of takes) expect((await eventsOf(take)).filter((e) => e === 'finalized')).toHaveLength(1);
    expect(
      takes.map((t) => offered.filter((m) => (m as { meeting_id: string }).meeting_id === t.meetingId).length),
    ).toEqual([1, 1, 1]);
    await vi.waitFor(() => expect(takes.map((t) => messagesFor(t).length)).toEqual([1, 1, 1]), { timeout: 10_000 });
  });

  it('should retry a claim a crashed sweep left in finalizing, but leave a fresh claim alone', async () => {
    const crashed = await completeTake(10, 5);
    const busy = await completeTake(10, 5);
    await api.rt.db.query(
      'test.claim',
      `UPDATE recording SET state = 'finalizing', updated_at = now() - interval '1 hour' WHERE meeting_id = $1`,
      [crashed.meetingId],
    );
    await api.rt.db.query(
      'test.claim',
      `UPDATE recording SET state = 'finalizing', updated_at = now() WHERE meeting_id = $1`,
      [busy.meetingId],
    );
    expect((await runSweep(api.sweeper, { staleFinalizingMs: 60_000 })).finalized).toBe(1);
    expect((await getRecording(api.rt.db, crashed.meetingId))?.state).toBe('finalized');
    expect((await getRecording(api.rt.db, busy.meetingId))?.state).toBe('finalizing');
    await api.rt.db.query('test.cleanup', 'DELETE FROM recording WHERE meeting_id = $1', [busy.meetingId]);
  });

  it('should give the claim back when finalizing fails, so the next pass retries', async () => {
    const take = await completeTake(10, 5);
    await api.rt.store.delete(segmentObjectName(take, 0, 4));
    expect(await runSweep(api.sweeper)).toMatchObject({ finalized: 0, failed: 1 });
    expect((await getRecording(api.rt.db, take.meetingId))?.state).toBe('stopped');
    expect(messagesFor(take)).toEqual([]);
    await api.rt.db.query('test.cleanup', 'DELETE FROM recording WHERE meeting_id = $1', [take.meetingId]);
  });
});

describe('runSweep: retention', () => {
  it("should drop a day's outbox partition past EVENT_RETENTION_HOURS, keep a day a webhook's cursor holds, and create the days ahead", async () => {
    const dayMs = 86_400_000;
    const today = Math.floor(Date.now() / dayMs) * dayMs;
    const dayOf = (n: number) => new Date(today - n * dayMs).toISOString().slice(0, 10).replace(/-/g, '');
    await ensurePartitions(api.rt.db, 'event_outbox', new Date(today - 5 * dayMs));
    const [free, held] = [
      await api.userId(await api.token(`day-free-${randomUUID().slice(0, 6)}`)),
      await api.userId(await api.token(`day-held-${randomUUID().slice(0, 6)}`)),
    ];
    // Noon of 5 and 4 days ago: both days wholly past 48 h.
    const insert = (user: string, daysAgo: number) =>
      api.rt.db.query(
        'test.day_events',
        `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
         SELECT $1, g, 'EntityChanged', '{}'::jsonb, $2::timestamptz, $2::timestamptz FROM generate_series(1, 3) g`,
        [user, new Date(today - daysAgo * dayMs + dayMs / 2).toISOString()],
      );
    await insert(free, 5);
    await insert(held, 4);
    await api.rt.db.query(
      'test.held_webhook',
      `INSERT INTO webhook (user_id, url, event_types, secret, cursor_seq) VALUES ($1, 'https://example.invalid/h', '{EntityChanged}', 's', 1)`,
      [held],
    );
    const partitions = async () => (await listPartitions(api.rt.db, 'event_outbox')).map((p) => p.name);
    expect(await partitions()).toEqual(
      expect.arrayContaining([`event_outbox_p${dayOf(5)}`, `event_outbox_p${dayOf(4)}`]),
    );

    const counts = await runSweep(api.rt);
    expect(counts.prunedEventPartitions).toBeGreaterThanOrEqual(1);
    const names = await partitions();
    expect(names).not.toContain(`event_outbox_p${dayOf(5)}`);
    expect(names).toContain(`event_outbox_p${dayOf(4)}`);
    for (let i = 0; i <= PARTITION_DAYS_AHEAD; i++) expect(names).toContain(`event_outbox_p${dayOf(-i)}`);
    const left = await api.rt.db.query<{ user_id: string; seq: number }>(
      'test.day_left',
      'SELECT user_id, seq::int FROM event_outbox WHERE user_id = ANY($1::uuid[]) ORDER BY seq',
      [[free, held]],
    );
    // The held day keeps what the cursor (1) has not passed; its other row goes by DELETE.
    expect(left.rows).toEqual([
      { user_id: held, seq: 2 },
      { user_id: held, seq: 3 },
    ]);
    await api.rt.db.query('test.cleanup', 'DELETE FROM webhook WHERE user_id = $1', [held]);
    // The past days made here would take the rows the next tests write to the default partition.
    for (let i = 1; i <= 4; i++)
      await api.rt.db.query('test.cleanup', `DROP TABLE IF EXISTS event_outbox_p${dayOf(i)}`);
  });

  it("should drop the manifest's past months left empty and refuse to drop a month holding rows", async () => {
    expect(await ensurePartitions(api.rt.db, 'segment_manifest', new Date('2001-03-15T00:00:00Z'))).toEqual([
      'segment_manifest_p200103',
    ]);
    expect(await ensurePartitions(api.rt.db, 'segment_manifest', new Date('2001-04-15T00:00:00Z'))).toEqual([
      'segment_manifest_p200104',
    ]);
    const take = await createTake(api, alice);
    await api.rt.db.query(
      'test.old_manifest',
      `INSERT INTO segment_manifest (meeting_id, start_sequence, end_sequence, started_at_ms, duration_ms, object_name, byte_count, crc32c, created_at)
       VALUES ($1, 0, 9, 0, 1000, 'old', 1, 'c', '2001-04-20T00:00:00Z')`,
      [take.meetingId],
    );
    const months = async () => (await listPartitions(api.rt.db, 'segment_manifest')).map((p) => p.name);

    await runSweep(api.rt);
    const names = await months();
    expect(names).not.toContain('segment_manifest_p200103');
    expect(names).toContain('segment_manifest_p200104');
    expect(names).toContain(`segment_manifest_p${new Date().toISOString().slice(0, 7).replace('-', '')}`);
    // The owner-rights function itself refuses a month holding rows: they name stored audio.
    await expect(
      api.sweeper.db.query('test.drop', 'SELECT drop_partition($1, $2)', [
        'segment_manifest',
        'segment_manifest_p200104',
      ]),
    ).rejects.toThrow(/holds rows/);
    expect(await months()).toContain('segment_manifest_p200104');
    // Once its meeting's rows are gone (a purge), the next pass drops the month.
    await api.rt.db.query('test.cleanup', `DELETE FROM segment_manifest WHERE meeting_id = $1`, [take.meetingId]);
    await runSweep(api.rt);
    expect(await months()).not.toContain('segment_manifest_p200104');
  });

  it('should delete outbox events past EVENT_RETENTION_HOURS and expired idempotency records, in batches, and nothing younger', async () => {
    const user = await api.userId(await api.token(`retention-${randomUUID().slice(0, 6)}`));
    const n = RETENTION_BATCH_ROWS + 1_234; // more than one batch
    await api.rt.db.query(
      'test.old_events',
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
       SELECT $1, g, 'EntityChanged', '{}'::jsonb, now() - interval '49 hours', now() - interval '49 hours' FROM generate_series(1, $2) g`,
      [user, n],
    );
    await api.rt.db.query(
      'test.young_events',
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at) SELECT $1, $2 + g, 'EntityChanged', '{"type":"EntityChanged","entity":"note","action":"updated","id":null,"meeting_id":null}'::jsonb, now() - interval '47 hours', now() FROM generate_series(1, 10) g`,
      [user, n],
    );
    await api.rt.db.query(
      'test.idempotency',
      `INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at)
       SELECT $1, gen_random_uuid(), 'POST', '/x', 'h', 'done', now() + CASE WHEN g <= 20 THEN interval '-1 minute' ELSE interval '1 hour' END FROM generate_series(1, 25) g`,
      [user],
    );
    const counts = await runSweep(api.sweeper);
    expect(counts.prunedEvents).toBeGreaterThanOrEqual(n);
    expect(counts.prunedIdempotencyRecords).toBeGreaterThanOrEqual(20);
    const left = await api.rt.db.query(
      'test.left',
      'SELECT min(seq)::int AS oldest, count(*)::int AS n FROM event_outbox WHERE user_id = $1',
      [user],
    );
    expect(left.rows[0]).toEqual({ oldest: n + 1, n: 10 });
    const records = await api.rt.db.query(
      'test.left_idem',
      'SELECT count(*)::int AS n FROM idempotency_record WHERE principal = $1',
      [user],
    );
    expect(records.rows[0].n).toBe(5);
  });

  it('should delete each batch by walking the indexes, never scanning a whole table', async () => {
    // Enough rows, analyzed, a third of them expired (as in steady state: 72 h of events, 48 h
    // kept), that the planner scans the table sequentially when a statement's shape lets it (as
    // `DELETE … WHERE id IN (SELECT … LIMIT n)` did). EXPLAIN deletes nothing; cleaned up below.
    const user = await api.userId(await api.token(`plan-${randomUUID().slice(0, 6)}`));
    await api.rt.db.query(
      'test.many_events',
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at, published_at)
       SELECT $1, g, 'EntityChanged', '{}'::jsonb, now() - make_interval(secs => 72 * 36 * (100000 - g) / 1000), now() FROM generate_series(1, 100000) g`,
      [user],
    );
    await api.rt.db.query(
      'test.many_records',
      `INSERT INTO idempotency_record (principal, key, method, path, request_hash, state, expires_at)
       SELECT $1, gen_random_uuid(), 'POST', '/x', 'h', 'done', now() + make_interval(secs => g - 33000) FROM generate_series(1, 100000) g`,
      [user],
    );
    await api.rt.db.query('test.analyze', 'ANALYZE event_outbox, idempotency_record');
    const explain = async (sql: string, params: unknown[]) => {
      const { rows } = await api.rt.db.query('test.explain', `EXPLAIN (FORMAT JSON) ${sql}`, params);
      return JSON.stringify(rows[0]);
    };
    // The rows are in the default partition (no day's partition covers the past here).
    const events = await explain(deleteExpiredEvents('event_outbox_default'), [48, RETENTION_BATCH_ROWS]);
    expect(events).not.toContain('Seq Scan');
    expect(events).toContain('event_outbox_default_created_at_idx');
    const records = await explain(DELETE_EXPIRED_IDEMPOTENCY_RECORDS, [RETENTION_BATCH_ROWS]);
    expect(records).not.toContain('Seq Scan');
    expect(records).toContain('idempotency_record_expires_at_idx');
    await api.rt.db.query('test.cleanup', 'DELETE FROM event_outbox WHERE user_id = $1', [user]);
    await api.rt.db.query('test.cleanup', 'DELETE FROM idempotency_record WHERE principal = $1', [user]);
  });
});

describe('runSweep: outbox and orphaned takes', () => {
  it('should republish an outbox row whose publish failed', async () => {
    const userId = aliceId;
    const id = randomUUID();
    const payload = { type: 'EntityChanged', entity: 'note', action: 'created', id: randomUUID(), meeting_id: null };
    await api.rt.db.query(
      'test.outbox',
      `INSERT INTO event_outbox (id, user_id, seq, event_type, payload, created_at) VALUES ($1, $2, 100000, 'EntityChanged', $3, now() - interval '1 minute')`,
      [id, userId, JSON.stringify(payload)],
    );
    expect((await runSweep(api.sweeper)).republished).toBeGreaterThanOrEqual(1);
    await vi.waitFor(() => expect(events.find((e) => (e.data as any).event_id === id)).toBeDefined(), {
      timeout: 10_000,
    });
    const got = events.find((e) => (e.data as any).event_id === id)!;
    expect(got.data).toMatchObject({ seq: 100000, user_id: userId, body: payload });
    expect(got.attributes).toMatchObject({ user_id: userId, seq: '100000', event_type: 'EntityChanged' });
    const after = await api.rt.db.query('test.published', 'SELECT published_at FROM event_outbox WHERE id = $1', [id]);
    expect(after.rows[0].published_at).not.toBeNull();
  });

  it('should stop a take whose owner is gone past the grace, unless its lease is held or it is fresh', async () => {
    const orphan = await createTake(api, alice);
    await storeLiveSegment(api, orphan, 0, 4);
    await storeLiveSegment(api, orphan, 10, 14); // a gap keeps it stopped (not finalized) after the stop
    const fresh = await createTake(api, alice);
    const idle = `now() - make_interval(secs => ${30 + api.config.RECORDING_DISCONNECT_GRACE_SECONDS + 5})`;
    await api.rt.db.query('test.idle', `UPDATE recording SET updated_at = ${idle} WHERE meeting_id = $1`, [
      orphan.meetingId,
    ]);

    const key = recordingLeaseKey(orphan.meetingId, 1);
    expect(await coordination.acquire(key, 'instance-a', 60_000)).not.toBeNull();
    expect((await runSweep(api.sweeper, { coordination })).stopped).toBe(0);
    await coordination.release(key, 'instance-a');

    expect((await runSweep(api.sweeper, { coordination })).stopped).toBe(1);
    const rec = await getRecording(api.rt.db, orphan.meetingId);
    expect(rec).toMatchObject({ state: 'stopped', stop_reason: 'connection_closed', owner_instance: null });
    expect(Date.parse(rec!.gap_upload_deadline!)).toBeGreaterThan(Date.now() + 1700_000);
    const history = await api.request('GET', `/meetings/${orphan.meetingId}/recording/events?limit=1`, {
      token: alice,
    });
    expect(history.body.items[0]).toMatchObject({
      event_type: 'recording_stopped',
      payload: { reason: 'connection_closed', by: 'sweep', highest_contiguous_sequence: 4, missing_ranges: [[5, 9]] },
    });
    expect((await getRecording(api.rt.db, fresh.meetingId))?.state).toBe('recording');
    await api.rt.db.query('test.cleanup', 'DELETE FROM recording WHERE meeting_id = ANY($1)', [
      [orphan.meetingId, fresh.meetingId],
    ]);
  });
});

describe('sweepHandler', () => {
  const call = async (handler: ReturnType<typeof sweepHandler>, headers: Record<string, string>, body?: unknown) => {
    let status = 0;
    let json: any;
    const res = {
      status(code: number) {
        status = code;
        return res;
      },
      json(b: unknown) {
        json = b;
      },
    };
    await handler({ headers, body }, res);
    return { status, json };
  };

  it('should require the service token locally and run passes over the requested period', async () => {
    const handler = sweepHandler(api.rt);
    expect((await call(handler, {})).status).toBe(401);
    expect((await call(handler, { authorization: `Bearer ${alice}` })).status).toBe(401);
    const once = await call(handler, { authorization: `Bearer ${api.serviceToken}` });
    expect(once).toMatchObject({ status: 200, json: { passes: 1, failed: 0 } });
    // Interval 0.4 s over a 1 s period: passes at 0, 0.4 and 0.8 s.
    const period = await call(handler, { authorization: `Bearer ${api.serviceToken}` }, { period_seconds: 1 });
    expect(period).toMatchObject({ status: 200, json: { passes: 3 } });
  });
});
