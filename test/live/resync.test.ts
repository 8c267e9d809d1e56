// Retention meets replay: a hello whose last_seq is older than the oldest event the outbox still
// keeps gets ResyncRequired first (the client refetches what it shows), then what is kept.
import { describe, expect, it } from 'vitest';
import { TestClient, createMeeting, token, useInstance } from './helpers';

const live = useInstance();

describe('replay past the retention window', () => {
  it('should send ResyncRequired with the oldest kept seq before the kept events, and nothing of the kind when none is missing', async () => {
    const t = await token(live.instance.config, 'resync');
    for (let i = 0; i < 3; i++) await createMeeting(live.instance, t);
    const { rows } = await live.database.db.query<{ user_id: string; seq: number }>(
      'test.events',
      `SELECT user_id, seq FROM event_outbox WHERE user_id = (SELECT id FROM app_user WHERE username = 'resync') ORDER BY seq`,
    );
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    // What the sweep's retention does to events past EVENT_RETENTION_HOURS.
    await live.database.db.query('test.prune', 'DELETE FROM event_outbox WHERE user_id = $1 AND seq <= 2', [rows[0].user_id]);

    const behind = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 0 });
    await behind.waitFor((m) => m.seq === 3, 10_000);
    expect(behind.messages.filter((m) => m.type !== 'ready').map((m) => m.type === 'ResyncRequired' ? m : m.seq)).toEqual([{ type: 'ResyncRequired', oldest_seq: 3 }, 3]);
    behind.close();

    const current = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 2 });
    await current.waitFor((m) => m.seq === 3, 10_000);
    expect(current.ofType('ResyncRequired')).toEqual([]);
    current.close();
  });
});
