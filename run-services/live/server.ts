// Cloud Run entry of the live service: /healthz and the /ws WebSocket on $PORT. On SIGTERM
// (Cloud Run gives 10 s) it flushes every buffer, advises clients to reconnect (1012), releases
// leases, presence and its subscription, and exits within 8 s.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import { createLogger } from '@mi/lib/log';
import { createRuntime } from '@mi/lib/runtime';
import { asyncApiDocument } from './asyncapi';
import { createLiveService } from './service';

const EXIT_DEADLINE_MS = 8_000;

// Cloud Run names the port PORT; it plays the part of CORE_PORT here.
const config = loadConfig({ ...process.env, ...(process.env.PORT ? { CORE_PORT: process.env.PORT } : {}) });
const log = createLogger({ level: config.LOG_LEVEL, name: 'live', project: config.GOOGLE_CLOUD_PROJECT });
const database = await openDatabase(config);
const rt = createRuntime(config, database.db, { log, name: 'live' });
if (config.STORAGE_EMULATOR_HOST) await rt.store.ensureBucket(); // in the cloud Terraform owns the bucket

const live = createLiveService(rt);
await live.start();

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://live').pathname;
  if (req.method === 'GET' && path === '/healthz') {
    const ok = live.accepting;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
    return;
  }
  if (req.method === 'GET' && path === '/asyncapi.json') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(asyncApiDocument({ host: req.headers.host ?? 'localhost', protocol: 'wss' })));
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 404, detail: 'only /ws, /healthz and /asyncapi.json live here' }));
});
server.on('upgrade', (req, socket, head) => {
  if (new URL(req.url ?? '/', 'http://live').pathname === '/ws') live.handleUpgrade(req, socket, head);
  else socket.destroy();
});
await new Promise<void>((resolve) => server.listen(config.CORE_PORT, '0.0.0.0', resolve));
log.info({ port: (server.address() as AddressInfo).port, instance: live.instanceId }, 'live service listening');

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping');
  setTimeout(() => {
    log.error('shutdown did not finish in time; exiting');
    process.exit(1);
  }, EXIT_DEADLINE_MS).unref();
  await live.shutdown('shutdown');
  server.closeAllConnections();
  server.close();
  await Promise.allSettled([rt.close(), database.close()]);
  log.info('stopped');
  process.exit(0);
}
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
