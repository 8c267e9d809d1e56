// An api instance caches a user's routes (lib/fanout/routes.ts) and trusts them while the
// user's routes version is unchanged; a hello bumps it. The test caches "no instance" for a user
// (two REST creates with no tab: the second's events are written published, never sent), opens a
// tab on another instance with the outbox catch-up off, and creates again: the event can reach
// the tab only over the bus (its starting point lies before it). Without the hello's bump, or with
// the cache ignoring the version, the instance keeps "no instance" and the tab never gets it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { TestClient, createMeeting, fileEnv, openTestDatabase, startInstance, token, type Instance } from './helpers';

let database: OpenedDatabase;
let rest: Instance;
let live: Instance;

beforeAll(async () => {
  database = await openTestDatabase();
  const env = fileEnv();
  // Cached for the whole test: only a version change can make the instance read presence again.
  rest = await startInstance(database, { ...env, EVENT_ROUTES_CACHE_SECONDS: '3600' }, { instanceId: 'routes-rest' });
  live = await startInstance(database, env, { instanceId: 'routes-live', catchUpMs: 3_600_000 });
});

afterAll(async () => {
  await Promise.allSettled([rest, live].map((i) => i?.close()));
  await database?.close();
});

describe('cached routes', () => {
  it('should bring an event to a tab that connects after its routes were cached, over the bus', async () => {
    const u = await token(rest.config, 'routes-u');
    await createMeeting(rest, u); // no tab: presence read, "no instance" cached
    const quiet = await createMeeting(rest, u); // written published at the cached version
    const { rows } = await database.db.query<{ published: boolean }>(
      'test.published',
      `SELECT published_at IS NOT NULL AS published FROM event_outbox WHERE payload->>'id' = $1`,
      [quiet],
    );
    expect(rows).toEqual([{ published: true }]);

    const tab = await TestClient.connect(live.wsUrl, u);
    const meetingId = await createMeeting(rest, u);
    expect(await tab.waitFor({ type: 'EntityChanged', id: meetingId })).toMatchObject({ action: 'created' });
    tab.close();
  });
});
