// One live instance on the port: /healthz (liveness), /readyz (serving and the database answers), the /ws WebSocket
// and the published documents. Run by server.ts, either alone
// (LIVE_WORKERS=1) or as one of its node:cluster workers, which share the port. On SIGTERM
// (Cloud Run gives 10 s; the primary forwards it) it flushes every buffer, advises clients to
// reconnect (1012), releases leases, presence and its subscription, and exits within 8 s.
import { asyncApiDocument } from './asyncapi';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import { notReady } from '@mi/lib/db/pool';
import { DomainError } from '@mi/lib/errors';
import { PROBLEM_CONTENT_TYPE, toProblem } from '@mi/lib/errors/problem';
import type { Logger } from '@mi/lib/telemetry/log';
import { mlContractDocuments } from '@mi/lib/ml/documents';
import { createRuntime } from '@mi/lib/adapters/runtime';
import { startWebhookDispatcher } from '@mi/lib/webhooks/dispatcher';
import { createLiveService } from './service';

export const EXIT_DEADLINE_MS = 8_000;

export async function runInstance(config: Config, log: Logger): Promise<void> {
  const database = await openDatabase(config);
  const rt = createRuntime(config, database.db, { log, name: 'live', service: 'live' });
  if (config.STORAGE_EMULATOR_HOST) await rt.store.ensureBucket(); // in the cloud Terraform owns the bucket

  const live = createLiveService(rt);
  await live.start();
  // Each instance (and worker) also delivers webhooks: CPU is always allocated here and at least
  // one instance runs (docs/webhooks.md). Claims are leases, so any number of them share the work.
  const webhooks = startWebhookDispatcher(rt);

  const mlDocuments = mlContractDocuments();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://live').pathname;
    if (req.method === 'GET' && path === '/healthz') {
      const ok = live.accepting;
      const body = { status: ok ? 'ok' : 'unavailable', fanout: live.fanout, firestore_writes: live.firestoreWrites };
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    if (req.method === 'GET' && path === '/readyz') {
      // Ready: accepting connections (not starting or draining) and the database answers.
      const draining = live.accepting
        ? null
        : new DomainError('unavailable', 'not accepting connections', undefined, 1);
      void (draining ? Promise.resolve(draining) : notReady(rt.db)).then((err) => {
        if (!err)
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
        const { problem, headers } = toProblem(err);
        res
          .writeHead(problem.status, { 'content-type': PROBLEM_CONTENT_TYPE, ...headers })
          .end(JSON.stringify(problem));
      });
      return;
    }
    if (req.method === 'GET' && path === '/asyncapi.json') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(asyncApiDocument({ host: req.headers.host ?? 'localhost', protocol: 'wss' })));
      return;
    }
    const mlDocument = req.method === 'GET' ? mlDocuments[path] : undefined;
    if (mlDocument)
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(mlDocument));
    const detail = `only /ws, /healthz, /readyz, /asyncapi.json and ${Object.keys(mlDocuments).join(', ')} live here`;
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 404, detail }));
  });
  server.on('upgrade', (req, socket, head) => {
    if (new URL(req.url ?? '/', 'http://live').pathname === '/ws') live.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(config.CORE_PORT, '0.0.0.0', resolve));
  const where = {
    port: (server.address() as AddressInfo).port,
    instance: live.instanceId,
    pid: process.pid,
    worker: cluster.worker?.id,
  };
  log.info(where, 'live service listening');

  let stopping = false;
  async function stop(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    log.info({ signal, instance: live.instanceId }, 'stopping');
    setTimeout(() => {
      log.error('shutdown did not finish in time; exiting');
      process.exit(1);
    }, EXIT_DEADLINE_MS).unref();
    // Attempts in flight are not waited for: their leases lapse and another instance retries them.
    void webhooks.stop();
    await live.shutdown('shutdown');
    server.closeAllConnections();
    server.close();
    await Promise.allSettled([rt.close(), database.close()]);
    log.info({ instance: live.instanceId }, 'stopped');
    process.exit(0);
  }
  // `on`, not `once`: Ctrl-C reaches a worker both from the terminal and from the primary.
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
