// `ready` goes out only after the connection's starting point is fixed (decisions.md section 8):
// every event committed after the client received `ready` reaches it, with or without last_seq.
// The live instance's read of the starting point (the user's latest seq) is held by the test while
// it commits an event through the REST API of another instance; then the read goes on. Sent
// before that read (the old order), `ready` reached the tab before the event was committed, the
// read then counted the event as before the tab, and the tab never got it. Catch-up is off: only
// the replay and the bus can bring an event.
import type { Database } from '@mi/lib/db/pool';
import { beforeAll, describe, expect, it } from 'vitest';
import { latestSeq } from '@mi/lib/events/outbox';
import { TestClient, aroundQueries, createMeeting, token, useInstances, type Instance } from './helpers';
import { until } from '../support/poll';

/** The fault hook: the next starting-point read of this user waits until released. */
let hold: { userId: string; held: () => void; released: Promise<void> } | null = null;

const held = (served: Database) =>
  aroundQueries(served, async (name, params, run) => {
    const h = hold;
    if (name === 'events.listen_from' && h && params?.[0] === h.userId) {
      hold = null;
      h.held();
      await h.released;
    }
    return run();
  });
const setup = useInstances([
  { instanceId: 'ready-rest' },
  { served: held, instanceId: 'ready-live', catchUpMs: 3_600_000 },
]);
let rest: Instance;
let live: Instance;
beforeAll(() => void ([rest, live] = setup.instances));

/** A meeting created through the REST instance, its event's seq, and whether the tab had `ready` by then. */
async function commitEvent(tab: TestClient, userToken: string, userId: string) {
  const meetingId = await createMeeting(rest, userToken);
  const afterReady = tab.messages.some((m) => m.type === 'ready');
  const seq = await latestSeq(setup.database.db, userId);
  // Published: its copy is on the bus before the test lets the read go on.
  await until('the event published', async () => {
    const { rows } = await setup.database.db.query<{ n: number }>(
      'test.unpublished',
      'SELECT count(*)::int AS n FROM event_outbox WHERE user_id = $1 AND published_at IS NULL',
      [userId],
    );
    return rows[0].n === 0;
  });
  return { meetingId, seq, afterReady };
}

/**
 * Connects a tab whose starting-point read is held while one event is committed, then released;
 * one more event is committed after `ready`. Returns the tab and both events.
 */
async function connectAcrossACommit(name: string, lastSeqOf?: (latest: number) => number) {
  const u = await token(rest.config, name);
  const me = await fetch(`${rest.url}/me`, { headers: { authorization: `Bearer ${u}` } });
  const userId = ((await me.json()) as { id: string }).id;
  await createMeeting(rest, u); // the user has events before the tab comes
  const before = await latestSeq(setup.database.db, userId);

  let held!: () => void;
  let release!: () => void;
  const reading = new Promise<void>((r) => (held = r));
  hold = { userId, held, released: new Promise<void>((r) => (release = r)) };
  const tab = await TestClient.open(live.wsUrl);
  tab.hello(u, { lastSeq: lastSeqOf?.(before) });
  await reading;
  const during = await commitEvent(tab, u, userId);
  release();
  await tab.waitFor({ type: 'ready' });
  const after = await commitEvent(tab, u, userId);
  expect(after.afterReady).toBe(true);
  return { tab, before, during, after };
}

const seqsOf = (tab: TestClient) => tab.messages.filter((m) => m.seq !== undefined).map((m) => m.seq as number);

describe('ready', () => {
  it('should reach the tab with every event committed after its ready while its starting point is read (no last_seq)', async () => {
    const { tab, during, after } = await connectAcrossACommit('ready-fresh');
    // The rule: each event committed once the tab had `ready` reaches it.
    for (const e of [during, after].filter((x) => x.afterReady)) {
      expect(await tab.waitFor({ seq: e.seq }, { timeoutMs: 10_000 })).toMatchObject({ id: e.meetingId });
    }
    // `ready` waited for the read, so the event committed during it lies before the tab's start.
    expect(during.afterReady).toBe(false);
    expect(seqsOf(tab)).toEqual([after.seq]);
    tab.close();
  });

  it('should reach the tab with every event committed after its ready while its starting point is read (with last_seq)', async () => {
    const { tab, during, after } = await connectAcrossACommit('ready-back', (latest) => latest);
    for (const e of [during, after].filter((x) => x.afterReady)) {
      expect(await tab.waitFor({ seq: e.seq }, { timeoutMs: 10_000 })).toMatchObject({ id: e.meetingId });
    }
    expect(during.afterReady).toBe(false);
    // The event committed during the read is after last_seq: the replay brings it, then the live one.
    await tab.waitFor({ seq: after.seq });
    expect(seqsOf(tab)).toEqual([during.seq, after.seq]);
    tab.close();
  });
});
