// Account erasure under concurrency, on native PostgreSQL: a meeting created while a row batch
// runs. An outside transaction inserts the meeting; the batch starts, and the insert commits once
// the database shows the batch waiting (polled). The batch locks the user row before it lists the
// meetings (guard in lib/repositories/erasure.ts), so it lists the new one and records it for the
// object step; without the lock the user's delete cascades to it unrecorded, leaving its objects.
import { describe, expect, it } from 'vitest';
import { eraseRowBatch, requestErasure } from '@mi/lib/repositories/erasure';
import type { ApiHarness } from '../harness';
import { native, withNativeApi } from './native-api';
import { lockWaits, outsideClient } from '../support/lock-waits';

let api: ApiHarness;

withNativeApi((started) => {
  api = started;
});

describe.skipIf(!native)('account erasure under concurrency', () => {
  it('should record for the object step a meeting committed while a row batch waits for the user', async () => {
    const token = await api.token('erased-while-writing');
    const userId = await api.userId(token);
    const before = await api.meeting(token, 'recording');
    await api.rt.db.withTransaction((tx) => requestErasure(tx, userId));
    const outside = await outsideClient(api);
    let late: string;
    try {
      await outside.query('BEGIN'); // a create racing the erasure
      const { rows } = await outside.query<{ id: string }>(
        `INSERT INTO meeting (user_id, title, source_type, start_time)
         VALUES ($1, 'late', 'recording', now()) RETURNING id`,
        [userId],
      );
      late = rows[0].id;
      const batch = api.rt.db.withTransaction((tx) => eraseRowBatch(tx, userId));
      await lockWaits(api, 1);
      await outside.query('COMMIT');
      expect(await batch).toBe('done');
    } finally {
      await outside.end();
    }
    const { rows } = await api.rt.db.query<{ meeting_ids: string[] }>(
      'test.erasure',
      'SELECT meeting_ids FROM account_erasure WHERE user_id = $1',
      [userId],
    );
    expect(rows[0].meeting_ids.sort()).toEqual([before, late].sort());
    const left = await api.rt.db.query('test.meetings', 'SELECT 1 FROM meeting WHERE user_id = $1', [userId]);
    expect(left.rowCount).toBe(0);
  });
});
