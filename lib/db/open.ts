// The database a process runs on: DATABASE_URL when set (Cloud SQL, any Postgres with
// pgvector), otherwise the embedded PGlite: file-backed under DATA_DIR, in memory for tests.
import path from 'node:path';
import type { Config } from '../config';
import { startEmbeddedPostgres } from './embedded';
import { iamLoginToken } from './iam-login';
import { createDatabase, type Database, type DatabaseOptions } from './pool';

type DbConfig = Pick<
  Config,
  'DB_POOL_MAX' | 'DB_STATEMENT_TIMEOUT_MS' | 'DB_LOCK_TIMEOUT_MS' | 'DB_CONNECT_TIMEOUT_MS'
>;

/** The pool settings of a process, from its configuration. */
export function databaseOptions(config: DbConfig): DatabaseOptions {
  return {
    max: config.DB_POOL_MAX,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    lockTimeoutMs: config.DB_LOCK_TIMEOUT_MS,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
  };
}

export interface OpenedDatabase {
  db: Database;
  url: string;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR' | 'APP_ENV'> & DbConfig & Partial<Pick<Config, 'DB_IAM_AUTH'>>,
): Promise<OpenedDatabase> {
  if (config.DATABASE_URL) {
    // Cloud SQL IAM login: the service account's token is each new connection's password.
    const login = config.DB_IAM_AUTH ? { password: iamLoginToken() } : {};
    const db = createDatabase(config.DATABASE_URL, { ...databaseOptions(config), ...login });
    return { db, url: config.DATABASE_URL, close: () => db.close() };
  }
  const embedded = await startEmbeddedPostgres({
    dataDir: config.APP_ENV === 'test' ? undefined : path.join(config.DATA_DIR, 'pg'),
  });
  const db = createDatabase(embedded.url, databaseOptions(config));
  return {
    db,
    url: embedded.url,
    async close() {
      await db.close();
      await embedded.stop();
    },
  };
}
