// Recording takes under concurrency, on native PostgreSQL: starts, the sweep's stop of an idle
// take, resumes and two writers of one take's segments. Each test pins one interleaving: an
// outside transaction holds what the use cases need, they start, and it lets go once the database
// shows them waiting (polled). Removing the guard named by the marker above the locking line
// (lib/use-cases/recording.ts, lib/repositories/recordings.ts) makes its test fail.
import { describe, expect, it } from 'vitest';
import { SERVICE } from '@mi/lib/domain/actor';
import { claimTake, startTake, stopOrphanedTake } from '@mi/lib/use-cases/recording';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { NO_END } from '@mi/lib/repositories/manifest';
import { prepareRuns, SegmentCommitter } from '../../run-services/live/group-commit';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { createTake, frameBytes } from '../recording-fixtures';
import { lockWaits, outsideClient } from '../support/lock-waits';

let api: ApiHarness;
let token: string;

withNativeApi(async (started) => {
  api = started;
  token = await api.token('take-racer');
});

const take = async (meetingId: string, audioVersion: number) =>
  (
    await api.rt.db.query<{ state: string; owner_instance: string | null }>(
      'test.take',
      'SELECT state, owner_instance FROM recording WHERE meeting_id = $1 AND audio_version = $2',
      [meetingId, audioVersion],
    )
  ).rows[0];

describe.skipIf(!native)('recording takes under concurrency', () => {
  it('should start one take of two starts at once and tell the other recording_open', async () => {
    const userId = await api.userId(token);
    const meetingId = await api.meeting(token, 'recording');
    const start = () =>
      runUseCase(api.rt, { userId }, startTake, {
        meetingId,
        encoding: 'pcm_s16le',
        sampleRate: 16000,
        maxDurationSeconds: 60,
        ownerInstance: 'starter',
      }).then(
        (rec) => rec.audio_version,
        (err: { code?: string }) => err.code,
      );
    const outside = await outsideClient(api);
    try {
      // An uncommitted take of another writer: both starts wait for it, at the meeting's lock or
      // (without it) at the version they both chose; it rolls back.
      await outside.query('BEGIN');
      await outside.query(
        `INSERT INTO recording (meeting_id, audio_version, state, encoding, max_duration_seconds)
         VALUES ($1, 1, 'stopped', 'pcm_s16le', 60)`,
        [meetingId],
      );
      const starts = [start(), start()];
      await lockWaits(api, 2);
      await outside.query('ROLLBACK');
      expect((await Promise.all(starts)).sort()).toEqual([1, 'recording_open']);
    } finally {
      await outside.end();
    }
  });

  it('should not stop an idle take that a resume claimed while the sweep looked at it', async () => {
    const t = await createTake(api, token);
    await api.rt.db.query(
      'test.idle',
      `UPDATE recording SET updated_at = now() - interval '1 hour' WHERE meeting_id = $1 AND audio_version = $2`,
      [t.meetingId, t.audioVersion],
    );
    const outside = await outsideClient(api);
    try {
      await outside.query('BEGIN'); // a resume's claim, not yet committed
      await outside.query(
        `UPDATE recording SET owner_instance = 'resumer', updated_at = now()
         WHERE meeting_id = $1 AND audio_version = $2`,
        [t.meetingId, t.audioVersion],
      );
      const sweep = runUseCase(api.rt, SERVICE, stopOrphanedTake, {
        meetingId: t.meetingId,
        audioVersion: t.audioVersion,
        idleSeconds: 60,
        gapUploadDeadlineSeconds: 1800,
      });
      await lockWaits(api, 1);
      await outside.query('COMMIT');
      expect(await sweep).toBe(false);
    } finally {
      await outside.end();
    }
    expect(await take(t.meetingId, t.audioVersion)).toEqual({ state: 'recording', owner_instance: 'resumer' });
  });

  it('should record the owner a resume took the take from when another resume claimed it first', async () => {
    const userId = await api.userId(token);
    const t = await createTake(api, token); // owned by test-instance
    const outside = await outsideClient(api);
    try {
      await outside.query('BEGIN'); // the first resume's claim, not yet committed
      await outside.query(
        `UPDATE recording SET owner_instance = 'first', updated_at = now()
         WHERE meeting_id = $1 AND audio_version = $2`,
        [t.meetingId, t.audioVersion],
      );
      const claim = runUseCase(api.rt, { userId }, claimTake, {
        meetingId: t.meetingId,
        audioVersion: t.audioVersion,
        ownerInstance: 'second',
        connectionId: 'c2',
      });
      await lockWaits(api, 1);
      await outside.query('COMMIT');
      expect((await claim)?.previous_owner).toBe('first');
    } finally {
      await outside.end();
    }
    const { rows } = await api.rt.db.query<{ payload: { previous_owner: string } }>(
      'test.history',
      `SELECT payload FROM recording_event_history WHERE meeting_id = $1 AND event_type = 'recording_resumed'`,
      [t.meetingId],
    );
    expect(rows.map((r) => r.payload.previous_owner)).toEqual(['first']);
    expect(await take(t.meetingId, t.audioVersion)).toEqual({ state: 'recording', owner_instance: 'second' });
  });

  it("should not store a writer's range over the range another writer of the take committed meanwhile", async () => {
    const t = await createTake(api, token);
    const key = { meetingId: t.meetingId, audioVersion: t.audioVersion };
    const frames = Array.from({ length: 10 }, (_, seq) => ({ seq, bytes: frameBytes(seq + 1000), at: 0 }));
    const committer = new SegmentCommitter(api.rt.db, api.rt.store, () => undefined, api.rt.log);
    const runs = await prepareRuns(api.rt.store, key, [{ start: 0, end: 9, frames }]);
    const outside = await outsideClient(api);
    try {
      // The take's other writer (its old owner) has locked it and stored frames 0-9, uncommitted.
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM recording WHERE meeting_id = $1 AND audio_version = $2 FOR UPDATE', [
        t.meetingId,
        t.audioVersion,
      ]);
      await outside.query(
        `INSERT INTO segment_manifest (meeting_id, audio_version, start_sequence, end_sequence, started_at_ms,
           duration_ms, object_name, object_generation, byte_count, crc32c)
         VALUES ($1, $2, 0, 9, 0, 1000, 'elsewhere', 1, 100, 'AAAAAA==')`,
        [t.meetingId, t.audioVersion],
      );
      const commit = committer.commit({
        take: key,
        userId: t.userId,
        unknown: [[0, NO_END]],
        runs,
        progress: () => [],
      });
      await lockWaits(api, 1);
      await outside.query('COMMIT');
      // It learns the other writer's row and stores nothing over it.
      const outcome = await commit;
      expect(outcome.kind === 'stored' && outcome.stored).toEqual([]);
      expect(outcome.kind === 'stored' && outcome.rows.map((r) => r.object_name)).toEqual(['elsewhere']);
    } finally {
      await outside.end();
    }
  });
});
