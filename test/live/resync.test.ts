// Retention meets replay: a hello whose last_seq is older than the oldest event the outbox still
// keeps gets ResyncRequired first (the client refetches what it shows), then what is kept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { TestClient, createMeeting, fileEnv, openTestDatabase, startInstance, token, type Instance } from './helpers';

let database: OpenedDatabase;
let instance: Instance;

beforeAll(async () => {
  database = await openTestDatabase();
  instance = await startInstance(database, { ...fileEnv(), ML_SERVICE_URL: 'http://127.0.0.1:9' });
}, 60_000);
afterAll(async () => {
  await instance?.close();
  await database?.close();
});

describe('replay past the retention window', () => {
  it('should send ResyncRequired with the oldest kept seq before the kept events, and nothing of the kind when none is missing', async () => {
    const t = await token(instance.config, 'resync');
    for (let i = 0; i < 3; i++) await createMeeting(instance, t);
    const { rows } = await database.db.query<{ user_id: string; seq: number }>(
      'test.events',
      `SELECT user_id, seq FROM event_outbox WHERE user_id = (SELECT id FROM app_user WHERE username = 'resync') ORDER BY seq`,
    );
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    // What the sweep's retention does to events past EVENT_RETENTION_HOURS.
    await database.db.query('test.prune', 'DELETE FROM event_outbox WHERE user_id = $1 AND seq <= 2', [rows[0].user_id]);

    const behind = await TestClient.connect(instance.wsUrl, t, { lastSeq: 0 });
    await behind.waitFor((m) => m.seq === 3, 10_000);
    expect(behind.messages.filter((m) => m.type !== 'ready').map((m) => m.type === 'ResyncRequired' ? m : m.seq)).toEqual([{ type: 'ResyncRequired', oldest_seq: 3 }, 3]);
    behind.close();

    const current = await TestClient.connect(instance.wsUrl, t, { lastSeq: 2 });
    await current.waitFor((m) => m.seq === 3, 10_000);
    expect(current.ofType('ResyncRequired')).toEqual([]);
    current.close();
  });
});
