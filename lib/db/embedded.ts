// Embedded Postgres for the local stack (`npm start`) and the PGlite test runs: PGlite with
// pgvector, served over the pg wire protocol so the same `pg` code runs against it as against
// Cloud SQL. Connections share PGlite's one session, one transaction at a time.
//
// Built from pglite-socket's public parts only: our own net server hands each connection to a
// `PGLiteSocketHandler`, whose documented `queryQueue` option takes our protocol-aware queue
// (embedded-queue.ts) in place of the package's, which interleaves extended-protocol messages.
import { mkdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { ProtocolAwareQueue } from './embedded-queue';

export interface EmbeddedPostgres {
  url: string;
  db: PGlite;
  stop(): Promise<void>;
}

/** dataDir unset: in memory (tests). Otherwise file-backed, kept across starts. */
export async function startEmbeddedPostgres(opts: { dataDir?: string; port?: number } = {}): Promise<EmbeddedPostgres> {
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: opts.dataDir, extensions: { vector, btree_gin } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
  // The option is typed as the package's queue class; ours has the same public methods.
  const queryQueue = new ProtocolAwareQueue(db) as unknown as PGLiteSocketHandlerOptions['queryQueue'];
  const handlers = new Set<PGLiteSocketHandler>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const handler = new PGLiteSocketHandler({ queryQueue, closeOnDetach: true });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    handler.attach(socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    db,
    async stop() {
      await Promise.allSettled([...handlers].map((h) => h.detach(true)));
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      await db.close();
    },
  };
}
