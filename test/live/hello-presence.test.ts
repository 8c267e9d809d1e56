// A hello records the tab's presence before it reads the replay's starting point (the user's
// latest seq, read as it bumps the routes version). An event committed between the two is then
// either in the replay (committed before the read) or addressed to this instance by its publisher
// (who reads presence after its commit, the new version telling it to).
// The test commits an event through the REST API of another instance exactly between the two
// steps, whichever order the hello takes them in, with the outbox catch-up turned off: the tab
// gets it from the replay or the bus, or not at all. With the presence write not awaited, the
// replay reads first, the publisher finds no presence, and the event is lost to the tab.
import type { Database } from '@mi/lib/db/pool';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCoordination, type Coordination } from '@mi/lib/adapters/coordination';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { latestSeq } from '@mi/lib/events/outbox';
import {
  TestClient,
  aroundQueries,
  createMeeting,
  fileEnv,
  openTestDatabase,
  startInstance,
  token,
  type Instance,
} from './helpers';

let database: OpenedDatabase;
let coordination: Coordination;
let rest: Instance;
let live: Instance;

/** Set by the test: runs once, between the hello's presence write and its replay read. */
let between: (() => Promise<void>) | null = null;
let watchedUser = '';
let presenceWritten = false;
let replayRead: Promise<unknown> | null = null;

/** The test's step, once it started. */
let ran: Promise<void> | null = null;

/** Runs the test's step once, when the second of the two hello steps is about to run. */
async function interleave(): Promise<void> {
  if (between) ran = between();
  between = null;
  await ran;
}

beforeAll(async () => {
  database = await openTestDatabase();
  const env = fileEnv();
  rest = await startInstance(database, env, { instanceId: 'hello-rest' });
  const real = createCoordination({
    projectId: rest.config.GOOGLE_CLOUD_PROJECT,
    emulatorHost: rest.config.FIRESTORE_EMULATOR_HOST,
    collectionPrefix: 'live_',
  });
  coordination = {
    ...real,
    async addPresence(userId, connectionId, instanceId) {
      if (userId === watchedUser) {
        // The hello's next steps run now unless it awaits this write: did it read the replay's start?
        await nextTurn();
        if (replayRead) {
          await replayRead;
          await interleave();
        }
      }
      await real.addPresence(userId, connectionId, instanceId);
      if (userId === watchedUser) presenceWritten = true;
    },
  };
  // The live instance's database: its read of the watched user's latest seq is observed.
  const watched = (served: Database) =>
    aroundQueries(served, async (name, params, run) => {
      if (name !== 'events.listen_from' || params?.[0] !== watchedUser || !between) return run();
      if (presenceWritten) await interleave();
      const read = run();
      replayRead ??= read.catch(() => undefined);
      return read;
    });
  live = await startInstance(database, env, {
    served: watched,
    instanceId: 'hello-live',
    coordination,
    catchUpMs: 3_600_000, // off: only the replay and the bus can bring the event
  });
});

afterAll(async () => {
  await Promise.allSettled([rest, live].map((i) => i?.close()));
  await coordination?.close();
  await database?.close();
});

describe('hello', () => {
  it('should bring the tab an event committed between its presence write and its replay read', async () => {
    const u = await token(rest.config, 'hello-u');
    const me = await fetch(`${rest.url}/me`, { headers: { authorization: `Bearer ${u}` } });
    const userId = ((await me.json()) as { id: string }).id;
    await createMeeting(rest, u); // the user has events before the tab comes
    const lastSeq = await latestSeq(database.db, userId);

    let meetingId = '';
    let committedSeq = 0;
    between = async () => {
      // Through the REST API of the other instance: its publisher reads presence after the commit.
      meetingId = await createMeeting(rest, u);
      committedSeq = await latestSeq(database.db, userId);
      await vi.waitFor(async () => {
        const { rows } = await database.db.query<{ n: number }>(
          'test.unpublished',
          'SELECT count(*)::int AS n FROM event_outbox WHERE user_id = $1 AND published_at IS NULL',
          [userId],
        );
        expect(rows[0].n).toBe(0);
      });
    };
    watchedUser = userId;
    const tab = await TestClient.connect(live.wsUrl, u, { lastSeq });
    await vi.waitFor(() => expect(ran).not.toBeNull()); // the step ran during the hello
    await ran;
    expect(committedSeq).toBeGreaterThan(lastSeq);

    const event = await tab.waitFor({ type: 'EntityChanged', id: meetingId });
    expect(event.seq).toBeGreaterThan(lastSeq);
    expect(event.seq).toBeLessThanOrEqual(committedSeq);
    tab.close();
  });
});
