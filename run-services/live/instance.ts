// One live instance on the port: /healthz, the /ws WebSocket and the published documents. Run by server.ts, either alone
// (LIVE_WORKERS=1) or as one of its node:cluster workers, which share the port. On SIGTERM
// (Cloud Run gives 10 s; the primary forwards it) it flushes every buffer, advises clients to
// reconnect (1012), releases leases, presence and its subscription, and exits within 8 s.
import { asyncApiDocument } from './asyncapi';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import type { Logger } from '@mi/lib/telemetry/log';
import { mlContractDocuments } from '@mi/lib/ml/documents';
import { createRuntime } from '@mi/lib/adapters/runtime';
import { createLiveService } from './service';

export const EXIT_DEADLINE_MS = 8_000;

export async function runInstance(config: Config, log: Logger): Promise<void> {
  const database = await openDatabase(config);
  const rt = createRuntime(config, database.db, { log, name: 'live' });
  if (config.STORAGE_EMULATOR_HOST) await rt.store.ensureBucket(); // in the cloud Terraform owns the bucket

  const live = createLiveService(rt);
  await live.start();

  const mlDocuments = mlContractDocuments();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://live').pathname;
    if (req.method === 'GET' && path === '/healthz') {
      const ok = live.accepting;
      const body = { status: ok ? 'ok' : 'unavailable', fanout: live.fanout };
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    if (req.method === 'GET' && path === '/asyncapi.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(asyncApiDocument({ host: req.headers.host ?? 'localhost', protocol: 'wss' })));
      return;
    }
    const mlDocument = req.method === 'GET' ? mlDocuments[path] : undefined;
    if (mlDocument) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(mlDocument));
    const detail = `only /ws, /healthz, /asyncapi.json and ${Object.keys(mlDocuments).join(', ')} live here`;
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 404, detail }));
  });
  server.on('upgrade', (req, socket, head) => {
    if (new URL(req.url ?? '/', 'http://live').pathname === '/ws') live.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(config.CORE_PORT, '0.0.0.0', resolve));
  const where = { port: (server.address() as AddressInfo).port, instance: live.instanceId, pid: process.pid, worker: cluster.worker?.id };
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
