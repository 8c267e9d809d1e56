// Interleaving tests pin an order by holding a lock in an outside transaction and letting go once
// the database shows the requests waiting for it: polled, never decided by a sleep.
import pg from 'pg';
import { expect } from 'vitest';
import type { ApiHarness } from '../harness';

/** A connection of its own to the API's database, for the outside transaction. */
export async function outsideClient(api: ApiHarness): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: api.rt.db.pool.options.connectionString });
  await client.connect();
  return client;
}

/**
 * Resolves once `count` backends of the API's database wait for a lock. (A row's second waiter
 * waits for the first, not for the holder, so waiters are counted, not the holder's.) The API's
 * lock_timeout (DB_LOCK_TIMEOUT_MS) bounds how long they wait: commit soon after this.
 */
export async function lockWaits(api: ApiHarness, count = 1): Promise<void> {
  await expect.poll(() => lockWaiters(api), { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(count);
}

/** How many backends of the API's database wait for a lock now. */
export async function lockWaiters(api: ApiHarness): Promise<number> {
  const sql = `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`;
  return (await api.rt.db.query<{ n: number }>('test.lock_waits', sql)).rows[0].n;
}
