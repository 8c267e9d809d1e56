// Embedded Postgres for the local stack and tests: PGlite with pgvector, served over the
// pg wire protocol by pglite-socket so the same `pg` code runs against it as against
// Cloud SQL. pglite-socket multiplexes connections one transaction at a time.
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ProtocolAwareQueue } from './embedded-queue';

export interface EmbeddedPostgres {
  url: string;
  db: PGlite;
  stop(): Promise<void>;
}

/** dataDir unset: in memory (tests). Otherwise file-backed, kept across starts. */
export async function startEmbeddedPostgres(opts: { dataDir?: string; port?: number } = {}): Promise<EmbeddedPostgres> {
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: opts.dataDir, extensions: { vector } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
  const server = new PGLiteSocketServer({ db, port: opts.port ?? 0, host: '127.0.0.1', maxConnections: 200 });
  (server as unknown as { queryQueue: ProtocolAwareQueue }).queryQueue = new ProtocolAwareQueue(db);
  await server.start();
  const address = (server as unknown as { server: { address(): { port: number } } }).server.address();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${address.port}/postgres`,
    db,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
