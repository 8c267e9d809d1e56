// Recording takes for REST and sweep tests, written the way the live service writes them:
// a take row, segment objects (create-only) with manifest rows, and the stop transition.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { segmentObjectName } from '@mi/lib/objects/take-objects';
import { insertManifestRow } from '@mi/lib/repositories/manifest';
import {
  markStopped,
  markStopping,
  startRecording,
  type Encoding,
  type StopReason,
} from '@mi/lib/repositories/recordings';
import { createTranscription } from '@mi/lib/repositories/transcriptions';
import type { ApiHarness } from './harness';

export interface Take {
  meetingId: string;
  userId: string;
  transcriptionId: string;
  audioVersion: number;
}

/** Deterministic bytes of one frame (its sequence number shows in every byte pair). */
export function frameBytes(seq: number, size = 100): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i += 2) b.writeUInt16LE((seq * 7 + i) & 0xffff, i);
  return b;
}

export const framesBytes = (start: number, end: number, size = 100) =>
  Buffer.concat(Array.from({ length: end - start + 1 }, (_, i) => frameBytes(start + i, size)));

export async function createTake(
  api: ApiHarness,
  token: string,
  opts: { encoding?: Encoding; sampleRate?: number; meetingId?: string } = {},
): Promise<Take> {
  let meetingId = opts.meetingId;
  if (!meetingId) {
    const m = await api.request('POST', '/meetings', {
      token,
      headers: { 'idempotency-key': randomUUID() },
      body: { title: 'Recorded', source_type: 'recording' },
    });
    expect(m.status).toBe(201);
    meetingId = m.body.id as string;
  }
  return api.rt.db.withTransaction(async (tx) => {
    const { rows } = await tx.query<{ user_id: string }>(
      'test.meeting_owner',
      'SELECT user_id FROM meeting WHERE id = $1 FOR UPDATE',
      [meetingId],
    );
    const t = await createTranscription(tx, meetingId!, 'transcribing');
    const rec = await startRecording(tx, {
      meetingId: meetingId!,
      transcriptionId: t.id,
      encoding: opts.encoding ?? 'pcm_s16le',
      // 500 Hz makes a PCM frame 100 bytes (sample_rate / 10 × 2), which keeps the fixtures small.
      sampleRate: opts.sampleRate ?? 500,
      maxDurationSeconds: 14400,
      ownerInstance: 'test-instance',
    });
    return { meetingId: meetingId!, userId: rows[0].user_id, transcriptionId: t.id, audioVersion: rec.audio_version };
  });
}

/** A live segment: frames start..end in one object and one manifest row (no sha256). */
export async function storeLiveSegment(
  api: ApiHarness,
  take: Take,
  start: number,
  end: number,
  size = 100,
): Promise<Buffer> {
  const bytes = framesBytes(start, end, size);
  const name = segmentObjectName(take, start, end);
  const stored = await api.rt.store.write(name, bytes, { createOnly: true });
  await insertManifestRow(api.rt.db, {
    meeting_id: take.meetingId,
    audio_version: take.audioVersion,
    start_sequence: start,
    end_sequence: end,
    started_at_ms: start * 100,
    duration_ms: (end - start + 1) * 100,
    object_name: name,
    object_generation: Number(stored.generation),
    byte_count: bytes.length,
    crc32c: stored.crc32c,
  });
  return bytes;
}

export async function stopTake(
  api: ApiHarness,
  take: Take,
  gapDeadlineSeconds = 1800,
  reason: StopReason = 'user',
): Promise<void> {
  await api.rt.db.withTransaction(async (tx) => {
    expect(await markStopping(tx, take.meetingId, take.audioVersion, reason)).toBe(true);
    expect(await markStopped(tx, take.meetingId, take.audioVersion, gapDeadlineSeconds)).not.toBeNull();
  });
}

export async function expireGapDeadline(api: ApiHarness, take: Take): Promise<void> {
  await api.rt.db.query(
    'test.expire',
    `UPDATE recording SET gap_upload_deadline = now() - interval '1 second' WHERE meeting_id = $1 AND audio_version = $2`,
    [take.meetingId, take.audioVersion],
  );
}
