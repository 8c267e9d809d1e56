// Retention meets replay: a hello whose last_seq is older than the oldest event the outbox still
// keeps gets ResyncRequired first (the client refetches what it shows), then what is kept. That
// holds when the sweep's retention deletes events while the replay runs: the replay notices the
// gap where it reads and never skips events silently.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pruneExpired } from '@mi/lib/repositories/retention';
import { appendEvents } from '@mi/lib/events/outbox';
import type { Database } from '@mi/lib/db/pool';
import { TestClient, aroundQueries, createMeeting, range, token, useInstance, type Message } from './helpers';

/** Runs before each of the live service's own queries while set (pruneBeforeRead). */
let beforeQuery: ((name: string, params?: unknown[]) => Promise<void>) | null = null;
const hooked = (served: Database) =>
  aroundQueries(served, async (name, params, run) => {
    await beforeQuery?.(name, params);
    return run();
  });
const live = useInstance({}, { served: hooked });

afterEach(() => {
  beforeQuery = null;
  vi.restoreAllMocks();
});

async function userIdOf(t: string): Promise<string> {
  const res = await fetch(`${live.instance.url}/me`, { headers: { authorization: `Bearer ${t}` } });
  return ((await res.json()) as { id: string }).id;
}

/** What retention sees as past EVENT_RETENTION_HOURS (48 by default). */
async function age(userId: string, upToSeq: number): Promise<void> {
  await live.database.db.query(
    'test.age',
    `UPDATE event_outbox SET created_at = now() - interval '49 hours' WHERE user_id = $1 AND seq <= $2`,
    [userId, upToSeq],
  );
}

/** Runs the sweep's retention right before the replay's `nth` read of the user's events (1-based). */
function pruneBeforeRead(userId: string, nth: number): void {
  let reads = 0;
  beforeQuery = async (name, params) => {
    if (name === 'events.after' && params?.[0] === userId && ++reads === nth) await pruneExpired(live.database.db, 48);
  };
}

const shown = (messages: Message[]) =>
  messages.filter((m) => m.type !== 'ready').map((m) => (m.type === 'ResyncRequired' ? m : m.seq));

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
    await live.database.db.query('test.prune', 'DELETE FROM event_outbox WHERE user_id = $1 AND seq <= 2', [
      rows[0].user_id,
    ]);

    const behind = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 0 });
    await behind.waitFor({ seq: 3 }, { timeoutMs: 10_000 });
    expect(shown(behind.messages)).toEqual([{ type: 'ResyncRequired', oldest_seq: 3 }, 3]);
    behind.close();

    const current = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 2 });
    await current.waitFor({ seq: 3 }, { timeoutMs: 10_000 });
    expect(current.ofType('ResyncRequired')).toEqual([]);
    current.close();
  });

  it('should send ResyncRequired when retention deletes the events after the hello, before the replay reads them', async () => {
    const t = await token(live.instance.config, `resync-race-${randomUUID().slice(0, 6)}`);
    for (let i = 0; i < 3; i++) await createMeeting(live.instance, t);
    const userId = await userIdOf(t);
    await age(userId, 2);
    pruneBeforeRead(userId, 1);

    const client = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 0 });
    await client.waitFor({ seq: 3 }, { timeoutMs: 10_000 });
    expect(shown(client.messages)).toEqual([{ type: 'ResyncRequired', oldest_seq: 3 }, 3]);
    client.close();
  });

  it('should send ResyncRequired when retention deletes events in the middle of a replay of several pages', async () => {
    const t = await token(live.instance.config, `resync-pages-${randomUUID().slice(0, 6)}`);
    const userId = await userIdOf(t);
    await live.database.db.withTransaction((tx) =>
      appendEvents(
        tx,
        userId,
        range(1, 1200).map(() => ({
          type: 'EntityChanged',
          entity: 'note',
          action: 'updated' as const,
          id: randomUUID(),
          meeting_id: null,
        })),
      ),
    );
    await age(userId, 700);
    pruneBeforeRead(userId, 2); // after the first page (500 events) went out

    const client = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 0 });
    await client.waitFor({ seq: 1200 }, { timeoutMs: 20_000 });
    expect(shown(client.messages)).toEqual([
      ...range(1, 500),
      { type: 'ResyncRequired', oldest_seq: 701 },
      ...range(701, 1200),
    ]);
    client.close();
  });
});

describe('a hello too far behind', () => {
  it('should get ResyncRequired too_far_behind instead of a replay beyond LIVE_REPLAY_MAX_EVENTS (5,000), and a replay up to it', async () => {
    const max = live.instance.config.LIVE_REPLAY_MAX_EVENTS;
    expect(max).toBe(5_000);
    const t = await token(live.instance.config, `far-behind-${randomUUID().slice(0, 6)}`);
    const userId = await userIdOf(t);
    await live.database.db.withTransaction((tx) =>
      appendEvents(
        tx,
        userId,
        range(1, max + 1).map(() => ({
          type: 'EntityChanged',
          entity: 'note',
          action: 'updated' as const,
          id: randomUUID(),
          meeting_id: null,
        })),
      ),
    );
    const far = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 0 });
    await far.waitFor({ type: 'ResyncRequired' });
    // Then live events go on after it: a new one arrives, nothing of the backlog.
    const meetingId = await createMeeting(live.instance, t);
    await far.waitFor({ type: 'EntityChanged', id: meetingId });
    expect(shown(far.messages)).toEqual([
      { type: 'ResyncRequired', oldest_seq: max + 2, reason: 'too_far_behind' },
      max + 2,
    ]);
    far.close();

    const near = await TestClient.connect(live.instance.wsUrl, t, { lastSeq: 2 }); // exactly max events behind
    await near.waitFor({ seq: max + 2 }, { timeoutMs: 60_000 });
    expect(near.ofType('ResyncRequired')).toEqual([]);
    expect(near.messages.filter((m) => m.seq !== undefined).map((m) => m.seq)).toEqual(range(3, max + 2));
    near.close();
  });
});
