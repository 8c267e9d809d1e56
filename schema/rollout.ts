// What db:apply leaves until the release before this one has stopped (decision 0007). Deployment
// applies the schema before it rolls the new code out, so the older release runs on the new
// schema for a while: its live sessions until their WebSockets close (up to the live service's
// request timeout). Two changes of release 4 would break it:
//  - the manifest's conversion: releases before 4 write it `ON CONFLICT` on the range key, which a
//    table partitioned by created_at cannot have without that column (42P10 on every write);
//  - turning row security on: releases before 4 declare no scope, so the policies show them no row.
// While a session of an older release is connected the apply defers those and applies the rest,
// which both releases run on; an apply after the rollout (`--wait-older-release SECONDS`) waits for
// those sessions to go, then finishes.
import type pg from 'pg';
import { sleep } from '../lib/async';
import { RELEASE } from '../lib/db/pool';

/** Tables whose conversion to a partitioned table waits for the older release to stop. */
export const DEFERRED_CONVERSIONS: ReadonlySet<string> = new Set(['segment_manifest']);

/** Whether a plan statement turns a table's row security on. */
export const enablesRowSecurity = (statement: string) =>
  /^ALTER TABLE \S+ (ENABLE|FORCE) ROW LEVEL SECURITY;?$/i.test(statement.trim());

export interface OlderSession {
  pid: number;
  user: string;
  application: string;
  /** null where the caller may not see them (another user's session, without pg_read_all_stats). */
  address: string | null;
  since: string | null;
}

/**
 * The client sessions of this database, but the caller's, that an older release may hold: those
 * naming an older release, and unnamed ones (releases before 4 named none; psql and the consoles
 * name themselves). Every session of this release is named (lib/db/pool.ts's SESSION_NAME).
 */
export async function olderSessions(client: pg.Client): Promise<OlderSession[]> {
  const { rows } = await client.query<OlderSession>(
    `SELECT pid, usename AS user, application_name AS application, client_addr::text AS address,
            to_char(backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS since
       FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        -- A role without pg_read_all_stats (Cloud SQL's owner) sees another user's backend_type,
        -- address and start as null; background workers have no user.
        AND usesysid IS NOT NULL AND coalesce(backend_type, 'client backend') = 'client backend'
        AND (application_name = ''
             OR coalesce(substring(application_name FROM '^meeting-intelligence r(\\d+)$')::int, $1) < $1)
      ORDER BY backend_start`,
    [RELEASE],
  );
  return rows;
}

/** Polls olderSessions every 2 s until none is left or `waitMs` has passed; returns those left. */
export async function awaitOlderSessions(
  client: pg.Client,
  waitMs: number,
  log: (line: string) => void,
): Promise<OlderSession[]> {
  const until = Date.now() + waitMs;
  let older = await olderSessions(client);
  if (older.length && waitMs > 0)
    log(`-- waiting up to ${Math.round(waitMs / 1000)} s for ${describeSessions(older)} to go`);
  while (older.length && Date.now() < until) {
    await sleep(Math.min(2_000, until - Date.now()));
    older = await olderSessions(client);
  }
  return older;
}

export const describeSessions = (sessions: OlderSession[]) =>
  `${sessions.length} session(s) of an older release (${sessions
    .slice(0, 5)
    .map((s) => `pid ${s.pid} ${s.user}${s.address ? `@${s.address}` : ''}${s.since ? ` since ${s.since}` : ''}`)
    .join(', ')}${sessions.length > 5 ? ', …' : ''})`;

export class OlderReleaseError extends Error {
  constructor(
    readonly sessions: OlderSession[],
    readonly deferred: string[],
  ) {
    super(
      `${describeSessions(sessions)} still connected: ${deferred.length} change(s) deferred (listed above). ` +
        'Both releases run on the database as it stands; run db:apply again once they are gone.',
    );
    this.name = 'OlderReleaseError';
  }
}
