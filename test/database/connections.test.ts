// Production connection behaviour on native PostgreSQL: statement and lock timeouts, an
// exhausted pool, a server at max_connections and a database restart each answer 503
// problem+json with Retry-After (never a 500, never a hang past the timeout), and the service
// recovers by itself. PGlite has no lock waits, timeouts or connection limits to provoke.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { adminQuery, findNativeEngine, startNativeCluster, type NativeCluster } from '@mi/lib/dev/native-postgres';
import { createDatabase } from '@mi/lib/db/pool';
import { applySchema } from '../../schema/apply';
import { startApi, type ApiHarness } from '../harness';
import { TEST_LOGINS, type TestDatabase } from '../support/database';

const native = inject('database').kind === 'native';
if (!native)
  console.log('test/database/connections.test.ts skipped: PGlite has no lock waits, timeouts or connection limits');

/** A cluster of this file's own (settings of its own, restartable), with the schema applied. */
async function ownCluster(
  settings: Record<string, string | number> = {},
): Promise<{ cluster: NativeCluster; database: TestDatabase }> {
  const cluster = await startNativeCluster(findNativeEngine().engine!, { settings });
  await adminQuery(cluster.url(), 'CREATE EXTENSION vector');
  // The services' own logins, as the shared test cluster has them (test/support/database.ts).
  await adminQuery(cluster.url(), ...Object.values(TEST_LOGINS).map((l) => `CREATE ROLE ${l} LOGIN`));
  await applySchema(cluster.url(), { runtimeLogins: TEST_LOGINS });
  return { cluster, database: { url: cluster.url(), close: () => cluster.stop() } };
}

function expect503(res: { status: number; headers: Headers; body: any }) {
  expect(res.status).toBe(503);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(res.body.type).toMatch(/unavailable$/);
}

/** Holds a lock on the meeting's row from outside the service until released. */
async function lockMeeting(url: string, meetingId: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM meeting WHERE id = $1 FOR UPDATE', [meetingId]);
  return async () => {
    await client.query('ROLLBACK');
    await client.end();
  };
}

describe.skipIf(!native)('timeouts and pool exhaustion', () => {
  it('should answer 503 with Retry-After when a statement waits past lock_timeout, and change nothing', async () => {
    const api = await startApi({ DB_LOCK_TIMEOUT_MS: '300', DB_STATEMENT_TIMEOUT_MS: '0' });
    try {
      const alice = await api.token('alice');
      const id = await api.meeting(alice);
      const release = await lockMeeting(api.rt.db.pool.options.connectionString!, id);
      // The lock is held until release: any answer before it comes from lock_timeout.
      expect503(await api.request('PATCH', `/meetings/${id}`, { token: alice, body: { title: 'changed' } }));
      await release();
      expect((await api.request('GET', `/meetings/${id}`, { token: alice })).body.title).toBe('m');
      expect((await api.request('PATCH', `/meetings/${id}`, { token: alice, body: { title: 'changed' } })).status).toBe(
        200,
      );
    } finally {
      await api.close();
    }
  });

  it('should answer 503 with Retry-After when a statement runs past statement_timeout', async () => {
    const api = await startApi({ DB_LOCK_TIMEOUT_MS: '0', DB_STATEMENT_TIMEOUT_MS: '300' });
    try {
      const alice = await api.token('alice');
      const id = await api.meeting(alice);
      const release = await lockMeeting(api.rt.db.pool.options.connectionString!, id);
      expect503(await api.request('PATCH', `/meetings/${id}`, { token: alice, body: { title: 'changed' } }));
      await release();
    } finally {
      await api.close();
    }
  });

  it('should answer 503 with Retry-After when every pooled connection is busy past the connect timeout', async () => {
    const api = await startApi({ DB_POOL_MAX: '1', DB_CONNECT_TIMEOUT_MS: '300', DB_LOCK_TIMEOUT_MS: '10000' });
    try {
      const alice = await api.token('alice');
      const id = await api.meeting(alice);
      const release = await lockMeeting(api.rt.db.pool.options.connectionString!, id);
      // The first request takes the only connection and waits on the lock.
      const waiting = api.request('PATCH', `/meetings/${id}`, { token: alice, body: { title: 'first' } });
      // Polled on a connection of its own: the pool's only one is the waiting request's.
      const watcher = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
      await watcher.connect();
      const waits = `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`;
      await expect.poll(async () => (await watcher.query(waits)).rows[0].n, { timeout: 20_000 }).toBe(1);
      await watcher.end();
      // The only connection is held until release: a 503 before it comes from the connect timeout.
      expect503(await api.request('GET', `/meetings/${id}`, { token: alice }));
      await release();
      expect((await waiting).status).toBe(200);
      expect((await api.request('GET', `/meetings/${id}`, { token: alice })).body.title).toBe('first');
    } finally {
      await api.close();
    }
  });
});

describe.skipIf(!native)('a server at max_connections', () => {
  let own: Awaited<ReturnType<typeof ownCluster>>;
  beforeAll(async () => {
    own = await ownCluster({ max_connections: 8, superuser_reserved_connections: 0 });
  });
  afterAll(async () => {
    await own?.database.close();
  });

  it('should answer 503 with Retry-After while the server refuses connections, then recover', async () => {
    const seed = await startApi({}, { database: own.database });
    const alice = await seed.token('alice');
    const id = await seed.meeting(alice);
    await seed.close(); // its pooled connections go with it
    const hogs: pg.Client[] = [];
    for (;;) {
      const c = new pg.Client({ connectionString: own.cluster.url() });
      try {
        await c.connect();
        hogs.push(c);
      } catch (err) {
        expect((err as { code?: string }).code).toBe('53300');
        break;
      }
    }
    const api = await startApi({}, { database: own.database });
    try {
      expect503(await api.request('GET', `/meetings/${id}`, { token: alice }));
      await Promise.all(hogs.splice(0).map((c) => c.end()));
      expect((await api.request('GET', `/meetings/${id}`, { token: alice })).status).toBe(200);
    } finally {
      await Promise.all(hogs.map((c) => c.end()));
      await api.close();
    }
  });
});

describe.skipIf(!native)('a database restart under load', () => {
  let own: Awaited<ReturnType<typeof ownCluster>>;
  let api: ApiHarness;
  beforeAll(async () => {
    own = await ownCluster();
    api = await startApi({ DB_CONNECT_TIMEOUT_MS: '1000' }, { database: own.database });
  });
  afterAll(async () => {
    await api?.close();
    await own?.database.close();
  });

  it('should survive the database going away under a transaction in progress: 503, then a fresh connection', async () => {
    const db = createDatabase(own.cluster.url());
    try {
      let resume!: () => void;
      const paused = new Promise<void>((r) => (resume = r));
      let checkedOut = false;
      // The checked-out client's socket closing: what the restart must reach before the resume.
      const closed = new Promise<void>((resolve) =>
        db.pool.once('connect', (client) => client.once('error', () => resolve()).once('end', () => resolve())),
      );
      const tx = db.withTransaction(async (t) => {
        await t.query('test.first', 'SELECT 1');
        checkedOut = true;
        await paused; // the connection sits checked out between statements, as during a storage write
        await t.query('test.second', 'SELECT 1');
      });
      await vi.waitFor(() => expect(checkedOut).toBe(true), { timeout: 20_000 });
      // The server terminates the connection: pg emits 'error' on the checked-out client, which
      // crashed the process when nothing listened.
      await own.cluster.restart();
      await closed;
      resume();
      await expect(tx).rejects.toMatchObject({ code: 'unavailable', retryAfterSeconds: expect.any(Number) });
      expect((await db.query('test.after', 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  it('should answer only successes or 503 while the database restarts, and recover by itself', async () => {
    const alice = await api.token('alice');
    const id = await api.meeting(alice);
    const statuses: number[] = [];
    let running = true;
    const load = (async () => {
      for (let i = 0; running && i < 10_000; i++) {
        const res =
          i % 2
            ? await api.request('GET', `/meetings/${id}`, { token: alice })
            : await api.request('PATCH', `/meetings/${id}`, { token: alice, body: { title: `t${i}` } });
        if (res.status === 503) expect503(res);
        statuses.push(res.status);
      }
    })();
    await vi.waitFor(() => expect(statuses.length).toBeGreaterThan(4), { timeout: 20_000 }); // the load runs
    await own.cluster.restart({ downMs: 2_000 });
    // Recovery: requests succeed again, polled for, once the server is back.
    await expect
      .poll(async () => (await api.request('GET', `/meetings/${id}`, { token: alice })).status, {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(200);
    running = false;
    await load;
    expect(new Set(statuses.filter((s) => s !== 200))).toEqual(new Set([503]));
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.at(-1)).toBe(200);
  });
});
