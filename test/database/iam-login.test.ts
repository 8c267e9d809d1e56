// DB_IAM_AUTH: a unit logs in to the database as its service account with the token the
// metadata server gives it (Cloud SQL IAM database authentication), never a password of its own.
// Native PostgreSQL stands in for Cloud SQL: the login role's password is the token, checked by
// scram-sha-256; the metadata server is test/support/otlp.ts's (a real HTTP server).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import { adminQuery, findNativeEngine, startNativeCluster, type NativeCluster } from '@mi/lib/dev/native-postgres';
import { startMetadataServer, type MetadataServer } from '../support/otlp';

const native = inject('database').kind === 'native';
if (!native) console.log('test/database/iam-login.test.ts skipped: PGlite has no password authentication');

// A Cloud SQL IAM user's name: the service account email without ".gserviceaccount.com".
const LOGIN = 'mi-api@project.iam';
const TOKEN = 'ya29.iam-login-token';

describe.skipIf(!native)('database login as the service account (DB_IAM_AUTH)', () => {
  let cluster: NativeCluster;
  let metadata: MetadataServer;
  const saved = { ...process.env };
  const url = () => `postgres://${encodeURIComponent(LOGIN)}@127.0.0.1:${cluster.port}/postgres`;
  const open = (env: Record<string, string>) =>
    openDatabase(
      loadConfig({
        APP_ENV: 'test',
        SERVICE_AUTH_TOKEN: 'x'.repeat(32),
        IDENTITY_SECRET_KEY: 'y'.repeat(32),
        DATABASE_URL: url(),
        DB_CONNECT_TIMEOUT_MS: '10000',
        ...env,
      }),
    );

  beforeAll(async () => {
    cluster = await startNativeCluster(findNativeEngine().engine!);
    // The superuser stays trusted (the test's own setup); every other role must authenticate.
    writeFileSync(
      path.join(cluster.dataDir, 'pg_hba.conf'),
      'host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n',
    );
    await adminQuery(cluster.url(), `CREATE ROLE "${LOGIN}" LOGIN PASSWORD '${TOKEN}'`, 'SELECT pg_reload_conf()');
    metadata = await startMetadataServer(TOKEN);
    process.env.GCE_METADATA_HOST = metadata.host;
    process.env.METADATA_SERVER_DETECTION = 'assume-present';
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
  });
  afterAll(async () => {
    process.env = saved;
    await metadata?.close();
    await cluster?.stop();
  });

  it("should log in as the unit's IAM user with the metadata server's token", async () => {
    const before = metadata.tokenRequests;
    const opened = await open({ DB_IAM_AUTH: 'true' });
    try {
      const { rows } = await opened.db.query<{ who: string }>('test.who', 'SELECT current_user AS who');
      expect(rows[0].who).toBe(LOGIN);
      expect(metadata.tokenRequests).toBeGreaterThan(before);
    } finally {
      await opened.close();
    }
  });

  it('should be refused without it: the URL carries no password', async () => {
    const opened = await open({});
    try {
      await expect(opened.db.query('test.who', 'SELECT current_user')).rejects.toThrow();
    } finally {
      await opened.close();
    }
  });

  it('should answer unavailable (503), not fail otherwise, when the metadata server gives no token', async () => {
    await metadata.close();
    const opened = await open({ DB_IAM_AUTH: 'true' });
    try {
      await expect(opened.db.query('test.who', 'SELECT current_user')).rejects.toMatchObject({ code: 'unavailable' });
    } finally {
      await opened.close();
    }
  });
});
