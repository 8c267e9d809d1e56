// Which database engine the tests run on, chosen once per run: native PostgreSQL + pgvector
// whenever its binaries and the extension are installed (`npm run db:install-native`), else the
// embedded PGlite. TEST_DATABASE=pglite forces the embedded one, TEST_DATABASE=native the
// native one (an error when it is missing). On native, one throwaway cluster serves the run:
// a template database carries the schema, and each test file clones its own from it.
import { randomUUID } from 'node:crypto';
import { startEmbeddedPostgres } from '@mi/lib/db/embedded';
import {
  adminQuery,
  findNativeEngine,
  startNativeCluster,
  type ClusterOptions,
  type NativeCluster,
} from '@mi/lib/dev/native-postgres';
import { applySchema } from '../../schema/apply';
import type { ServiceKind } from '../../schema/roles';

export type TestEngine =
  | { kind: 'native'; label: string; adminUrl: string }
  | { kind: 'pglite'; label: string; why: string };

const TEMPLATE = 'mi_template';
/** The native cluster's login of each service kind (trust authentication), member of its mi_<kind> role. */
export const TEST_LOGINS: Record<ServiceKind, string> = {
  api: 'mi_api_login',
  live: 'mi_live_login',
  sweep: 'mi_sweep_login',
};

/**
 * The URL a service kind connects with: its own login on native. PGlite has one session and one
 * (super)user, so there the services run as it (docs/architecture.md "Tenant boundary").
 */
export function runtimeUrl(engine: TestEngine, url: string, kind: ServiceKind): string {
  if (engine.kind !== 'native') return url;
  const u = new URL(url);
  u.username = TEST_LOGINS[kind];
  return u.toString();
}
const EMPTY = 'mi_empty';
const TEST_SESSION_NAME = 'mi-test';

export interface RunningEngine {
  engine: TestEngine;
  /** The native cluster (restart for fault runs); null on PGlite. */
  cluster: NativeCluster | null;
  stop(): Promise<void>;
}

/** Starts the run's engine: a native cluster with the template databases, or nothing (PGlite). */
export async function startTestEngine(opts: ClusterOptions = {}): Promise<RunningEngine> {
  const choice = process.env.TEST_DATABASE ?? '';
  if (!['', 'native', 'pglite'].includes(choice))
    throw new Error(`TEST_DATABASE must be native or pglite, not ${choice}`);
  const found = findNativeEngine();
  if (choice === 'pglite' || !found.engine) {
    if (choice === 'native') throw new Error(`TEST_DATABASE=native but ${found.why}`);
    const why = choice === 'pglite' ? 'TEST_DATABASE=pglite' : found.why;
    return { engine: { kind: 'pglite', label: 'PGlite (embedded)', why }, cluster: null, stop: async () => {} };
  }
  // Commit timestamps let tests compare commit order with the order of what was committed.
  const cluster = await startNativeCluster(found.engine, {
    ...opts,
    settings: { track_commit_timestamp: 'on', ...opts.settings },
  });
  await adminQuery(cluster.url(), `CREATE DATABASE ${EMPTY}`, `CREATE DATABASE ${TEMPLATE}`);
  await adminQuery(cluster.url(EMPTY), 'CREATE EXTENSION vector');
  await adminQuery(cluster.url(TEMPLATE), 'CREATE EXTENSION vector');
  // Each service kind's own login, as in Cloud SQL: the services run with the row policies in force.
  await adminQuery(cluster.url(), ...Object.values(TEST_LOGINS).map((l) => `CREATE ROLE ${l} LOGIN`));
  await applySchema(cluster.url(TEMPLATE), { runtimeLogins: TEST_LOGINS });
  return {
    engine: { kind: 'native', label: found.engine.label, adminUrl: cluster.url() },
    cluster,
    stop: () => cluster.stop(),
  };
}

export interface TestDatabase {
  url: string;
  close(): Promise<void>;
}

/**
 * A database of its own for one test file (or bench, or fault run): with the schema applied
 * (default), or empty but for pgvector (`schema: false`, for db:apply's own tests).
 */
export async function createTestDatabase(engine: TestEngine, opts: { schema?: boolean } = {}): Promise<TestDatabase> {
  const withSchema = opts.schema ?? true;
  if (engine.kind === 'pglite') {
    const embedded = await startEmbeddedPostgres();
    if (withSchema) await applySchema(embedded.url);
    return { url: embedded.url, close: () => embedded.stop() };
  }
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  // CREATE DATABASE … TEMPLATE copies files: milliseconds, where applying schema.sql takes seconds.
  await adminQuery(engine.adminUrl, `CREATE DATABASE ${name} TEMPLATE ${withSchema ? TEMPLATE : EMPTY}`);
  // The tests' own sessions name themselves, as operators' tools do: db:apply takes an unnamed one
  // for an older release of the service (schema/rollout.ts).
  const url = `${engine.adminUrl.replace(/\/[^/]*$/, `/${name}`)}?application_name=${TEST_SESSION_NAME}`;
  return { url, close: () => adminQuery(engine.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
