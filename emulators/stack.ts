// The local stack: emulators (or the ones the user already runs), the embedded database, the
// REST API and the live WebSocket service on one port (CORE_PORT), the fake ML service and the
// periodic sweep. Everything it keeps lives under DATA_DIR.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { loadConfig, type Config } from '@mi/lib/config';
import { openDatabase } from '@mi/lib/db/open';
import { createLogger } from '@mi/lib/log';
import { createRuntime, type Runtime, type RuntimeOverrides } from '@mi/lib/runtime';
import { createApp } from '../functions/api/app';
import { runSweep } from '../functions/sweep';
import { createLiveService, type LiveService } from '../run-services/live/service';
import { registerConsole } from './console/routes';
import { applySchema } from '../schema/apply';
import { loadOrCreateDevSecrets } from './dev-secrets';
import { createMemoryBus } from './fallback/bus';
import { createMemoryCoordination } from './fallback/coordination';
import { createStaticFlags } from './fallback/flags';
import { gcloudAvailable, startFirestoreEmulator, startPubsubEmulator } from './gcloud';
import { loadOrCreateSignerKey } from './gcs/signer-key';
import { startGcsEmulator } from './gcs/server';
import { startFakeMl } from './ml/server';

export interface LocalStack {
  config: Config;
  rt: Runtime;
  url: string;
  stop(): Promise<void>;
}

type Stop = () => Promise<unknown>;

export async function startLocalStack(env: Record<string, string | undefined> = process.env): Promise<LocalStack> {
  const log = createLogger({ level: env.LOG_LEVEL ?? 'info', name: 'local-stack' });
  const stops: Stop[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((err) => log.warn({ err: String(err) }, 'stop failed'));
  };
  try {
    const dataDir = path.resolve(env.DATA_DIR ?? '.data');
    const appEnv = env.APP_ENV ?? 'development';
    const vars: Record<string, string | undefined> = { ...env, DATA_DIR: dataDir, APP_ENV: appEnv };
    if (appEnv === 'development') {
      const secrets = loadOrCreateDevSecrets(dataDir);
      for (const [k, v] of Object.entries(secrets)) vars[k] ??= v;
    }
    const signerFile = vars.STORAGE_SIGNER_KEY_FILE ?? path.join(dataDir, 'gcs-signer.json');
    const signer = loadOrCreateSignerKey(signerFile);
    vars.STORAGE_SIGNER_KEY_FILE = signerFile;

    let overrides: RuntimeOverrides | undefined;
    if ((!vars.PUBSUB_EMULATOR_HOST || !vars.FIRESTORE_EMULATOR_HOST) && !gcloudAvailable()) {
      log.warn(
        'gcloud (with Java) was not found: Pub/Sub and Firestore run as IN-PROCESS SUBSTITUTES (one instance only, nothing kept across starts). ' +
          'Install the Google Cloud CLI with its emulators for the real ones, or set PUBSUB_EMULATOR_HOST and FIRESTORE_EMULATOR_HOST.',
      );
      overrides = { bus: createMemoryBus(), coordination: createMemoryCoordination(), flags: createStaticFlags() };
    } else if (!vars.PUBSUB_EMULATOR_HOST) {
      const pubsub = await startPubsubEmulator({ dataDir: path.join(dataDir, 'pubsub') });
      stops.push(pubsub.stop);
      vars.PUBSUB_EMULATOR_HOST = pubsub.host;
      log.info({ host: pubsub.host }, 'Pub/Sub emulator started');
    }
    if (!overrides && !vars.FIRESTORE_EMULATOR_HOST) {
      const firestore = await startFirestoreEmulator({});
      stops.push(firestore.stop);
      vars.FIRESTORE_EMULATOR_HOST = firestore.host;
      log.info({ host: firestore.host }, 'Firestore emulator started');
    }
    if (!vars.STORAGE_EMULATOR_HOST) {
      const gcs = await startGcsEmulator({ dataDir: path.join(dataDir, 'gcs'), trustedKeys: [signer] });
      stops.push(gcs.stop);
      vars.STORAGE_EMULATOR_HOST = gcs.url;
      log.info({ url: gcs.url }, 'GCS emulator started');
    }

    const config = loadConfig(vars);
    const database = await openDatabase(config);
    stops.push(database.close);
    await applySchema(database.url, { log: (line) => log.info(line) });
    const rt = createRuntime(config, database.db, { log, overrides });
    stops.push(rt.close);
    await rt.store.ensureBucket();
    await rt.bus.ensureTopic(config.PUBSUB_TOPIC_EVENTS);
    await rt.bus.ensureTopic(config.PUBSUB_TOPIC_RECORDING_FINALIZED);

    // HTTP first (the fake ML calls the API back), then the fake ML, then the live service that
    // streams to it. Upgrades before the live service is up are refused.
    const app = createApp(rt);
    registerConsole(app, config);
    let live: LiveService | null = null;
    const server: Server = createServer(getRequestListener(app.fetch));
    server.on('upgrade', (req, socket, head) => {
      if (live && new URL(req.url ?? '/', 'http://x').pathname === '/ws') live.handleUpgrade(req, socket, head);
      else socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.CORE_PORT, config.HOST, resolve);
    });
    stops.push(() => new Promise((r) => server.close(r)));
    const port = (server.address() as AddressInfo).port;
    const url = `http://localhost:${port}`;

    const ml = await startFakeMl({ port: config.ML_PORT, coreUrl: url, serviceToken: config.SERVICE_AUTH_TOKEN, config });
    stops.push(ml.stop);
    const liveService = createLiveService(rt, { mlUrl: ml.url });
    await liveService.start();
    live = liveService;
    stops.push(() => liveService.shutdown('shutdown'));

    const timer = setInterval(() => {
      runSweep(rt, { coordination: rt.coordination }).catch((err) => log.warn({ err: String(err) }, 'sweep failed'));
    }, config.RECORDING_GAP_SWEEP_INTERVAL_SECONDS * 1000);
    stops.push(async () => clearInterval(timer));

    writeStackEnv(dataDir, { ...vars, DATABASE_URL: database.url, CORE_PORT: String(port), ML_SERVICE_URL: ml.url });
    log.info({ url, ws: `${url.replace('http', 'ws')}/ws`, docs: `${url}/docs`, ml: ml.url, data_dir: dataDir }, 'local stack ready');
    return { config, rt, url, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * The running stack's settings, so a deployable unit can run against it, e.g.
 * `set -a; . .data/local-stack.env; npx functions-framework --target=api --source=functions/dist`.
 */
function writeStackEnv(dataDir: string, vars: Record<string, string | undefined>) {
  const keys = ['APP_ENV', 'DATABASE_URL', 'PUBSUB_EMULATOR_HOST', 'FIRESTORE_EMULATOR_HOST', 'STORAGE_EMULATOR_HOST', 'STORAGE_SIGNER_KEY_FILE', 'STORAGE_BUCKET', 'ML_SERVICE_URL', 'IDENTITY_SECRET_KEY', 'SERVICE_AUTH_TOKEN', 'AUDIO_URL_SIGNING_KEY'];
  const lines = keys.filter((k) => vars[k]).map((k) => `${k}=${vars[k]}`);
  writeFileSync(path.join(dataDir, 'local-stack.env'), lines.join('\n') + '\n', { mode: 0o600 });
}
