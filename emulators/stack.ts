// The local stack: emulators (or the ones the user already runs), the embedded database, the
// REST API and the live WebSocket service on one port (CORE_PORT), the fake ML service (or, with
// ML_SERVICE_URL set, the ML team's real one and no fake at all) and the periodic sweep. Everything it keeps lives under DATA_DIR.
import { writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { ConfigError, loadConfig, type Config } from '@mi/lib/config';
import { lockDataDir } from '@mi/lib/db/data-dir-lock';
import { openDatabase, type OpenedDatabase } from '@mi/lib/db/open';
import type { Logger } from '@mi/lib/telemetry/log';
import { createRuntime, type Runtime, type RuntimeOverrides } from '@mi/lib/adapters/runtime';
import { createApp } from '../functions/api/app';
import { runSweep } from '../functions/sweep';
import { startWebhookDispatcher } from '@mi/lib/webhooks/dispatcher';
import { mlBatchSubscription } from '@mi/lib/ml/contract';
import { mlContractDocuments } from '@mi/lib/ml/documents';
import { asyncApiDocument } from '../run-services/live/asyncapi';
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
import { createStackLogger } from './log';
import { startFakeMl } from './ml/server';

export interface LocalStack {
  config: Config;
  rt: Runtime;
  url: string;
  log: Logger;
  stop(): Promise<void>;
}

type Stop = () => Promise<unknown>;

export async function startLocalStack(env: Record<string, string | undefined> = process.env): Promise<LocalStack> {
  const began = performance.now();
  const { log, format } = createStackLogger(env, env.LOG_LEVEL ?? 'info');
  const stops: Stop[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const stop of stops.reverse()) await stop().catch((err) => log.warn({ err: String(err) }, 'stop failed'));
    })());
  /** Runs one start step and logs it with its duration: the reader sees where the time goes. */
  const step = async <T>(what: string, fn: () => Promise<T>, fields: (v: T) => object = () => ({})): Promise<T> => {
    const t0 = performance.now();
    const value = await fn();
    const ms = Math.round(performance.now() - t0);
    log.info({ ...fields(value), ms }, `${what} (${(ms / 1000).toFixed(1)} s)`);
    return value;
  };
  try {
    const dataDir = path.resolve(env.DATA_DIR ?? '.data');
    const appEnv = env.APP_ENV ?? 'development';
    const vars: Record<string, string | undefined> = { ...env, DATA_DIR: dataDir, APP_ENV: appEnv };
    // Configuration first, before anything starts: a bad value fails in a second, naming its variable.
    if (appEnv === 'development') {
      const secrets = loadOrCreateDevSecrets(dataDir);
      for (const [k, v] of Object.entries(secrets)) vars[k] ??= v;
      // A stopped take is finalized by the sweep: locally it runs often, so `finished` (client) and
      // the console see a take final within a few seconds of its stop (deployed: 30 s, Cloud Scheduler).
      vars.RECORDING_GAP_SWEEP_INTERVAL_SECONDS ??= '2';
    }
    let config = loadConfig(vars);
    const lock = lockDataDir(dataDir, 'npm start');
    stops.push(async () => lock.release());

    // CORE_PORT is taken now and held: "in use" is known before the emulators' minute, and
    // nothing can take it meanwhile. Until the stack is ready it answers 503.
    let handler: RequestListener = (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end('{"status":"starting"}');
    };
    const server: Server = createServer((req, res) => handler(req, res));
    let live: LiveService | null = null;
    server.on('upgrade', (req, socket, head) => {
      if (live && new URL(req.url ?? '/', 'http://x').pathname === '/ws') live.handleUpgrade(req, socket, head);
      else socket.destroy();
    });
    await listenOn(server, 'CORE_PORT', config.CORE_PORT, config.HOST);
    stops.push(
      () =>
        new Promise((r) => {
          server.close(r);
          server.closeAllConnections();
        }),
    );
    const port = (server.address() as AddressInfo).port;
    const url = `http://localhost:${port}`;
    // ML_SERVICE_URL set: the ML team's own service takes the live and batch paths; no stand-in runs.
    const externalMl = env.ML_SERVICE_URL ? config.ML_SERVICE_URL : null;
    if (!externalMl && config.ML_PORT !== 0) await ensurePortFree('ML_PORT', config.ML_PORT, config.HOST);
    // The emulators it will start get fixed ports: checked now, before anything slow starts.
    const emulatorPorts = [
      ['PUBSUB_EMULATOR_PORT', config.PUBSUB_EMULATOR_PORT, vars.PUBSUB_EMULATOR_HOST],
      ['FIRESTORE_EMULATOR_PORT', config.FIRESTORE_EMULATOR_PORT, vars.FIRESTORE_EMULATOR_HOST],
      ['STORAGE_EMULATOR_PORT', config.STORAGE_EMULATOR_PORT, vars.STORAGE_EMULATOR_HOST],
    ] as const;
    for (const [variable, p, host] of emulatorPorts)
      if (!host && p !== 0) await ensurePortFree(variable, p, '127.0.0.1');

    const signerFile = vars.STORAGE_SIGNER_KEY_FILE ?? path.join(dataDir, 'gcs-signer.json');
    const signer = loadOrCreateSignerKey(signerFile);
    vars.STORAGE_SIGNER_KEY_FILE = signerFile;

    let overrides: RuntimeOverrides | undefined;
    if ((!vars.PUBSUB_EMULATOR_HOST || !vars.FIRESTORE_EMULATOR_HOST) && !gcloudAvailable()) {
      log.warn(
        'gcloud (with Java) was not found: Pub/Sub and Firestore run as IN-PROCESS SUBSTITUTES (one instance only, nothing kept across starts). ' +
          'Install the Google Cloud CLI with its emulators (docs/local-stack.md) for the real ones, or set PUBSUB_EMULATOR_HOST and FIRESTORE_EMULATOR_HOST.',
      );
      overrides = { bus: createMemoryBus(), coordination: createMemoryCoordination(), flags: createStaticFlags() };
    }
    log.info(
      { data_dir: dataDir, port },
      `starting the local stack on ${url} (the gcloud emulators take up to a minute)`,
    );

    // The slow parts at once: the Java emulators, our GCS emulator, the database and its schema.
    // Each stop is registered as soon as its part is up, so a failure elsewhere stops it too.
    const started = await Promise.allSettled([
      !overrides && !vars.PUBSUB_EMULATOR_HOST
        ? step(
            'Pub/Sub emulator started',
            () => startPubsubEmulator({ port: config.PUBSUB_EMULATOR_PORT, dataDir: path.join(dataDir, 'pubsub') }),
            (e) => ({ host: e.host }),
          ).then((e) => {
            stops.push(e.stop);
            vars.PUBSUB_EMULATOR_HOST = e.host;
          })
        : undefined,
      !overrides && !vars.FIRESTORE_EMULATOR_HOST
        ? step(
            'Firestore emulator started',
            () => startFirestoreEmulator({ port: config.FIRESTORE_EMULATOR_PORT }),
            (e) => ({ host: e.host }),
          ).then((e) => {
            stops.push(e.stop);
            vars.FIRESTORE_EMULATOR_HOST = e.host;
          })
        : undefined,
      !vars.STORAGE_EMULATOR_HOST
        ? step(
            'GCS emulator started',
            () =>
              startGcsEmulator({
                port: config.STORAGE_EMULATOR_PORT,
                dataDir: path.join(dataDir, 'gcs'),
                trustedKeys: [signer],
              }),
            (e) => ({ url: e.url }),
          ).then((e) => {
            stops.push(e.stop);
            vars.STORAGE_EMULATOR_HOST = e.url;
          })
        : undefined,
      step(config.DATABASE_URL ? 'database connected (DATABASE_URL)' : 'embedded database (PGlite) opened', () =>
        openDatabase(config),
      ).then(async (database) => {
        stops.push(database.close);
        await step(
          'schema applied',
          () => applySchema(database.url, { log: (line) => log.debug(line) }),
          (r) => ({ statements: r.applied ? r.statements.length : 0 }),
        );
        return database;
      }),
    ]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const database = (started[3] as PromiseFulfilledResult<OpenedDatabase>).value;

    config = loadConfig(vars);
    const rt = await step('runtime ready (bucket, topics)', async () => {
      const rt = createRuntime(config, database.db, { log, overrides });
      stops.push(rt.close);
      await rt.store.ensureBucket();
      await rt.bus.ensureTopic(config.PUBSUB_TOPIC_EVENTS);
      await rt.bus.ensureTopic(config.PUBSUB_TOPIC_RECORDING_FINALIZED);
      // The ML's work queue exists from the start, as Terraform makes it: nothing finalized waits on the ML being up.
      await rt.bus.ensureQueue(
        config.PUBSUB_TOPIC_RECORDING_FINALIZED,
        mlBatchSubscription(config.PUBSUB_TOPIC_RECORDING_FINALIZED),
      );
      return rt;
    });

    // HTTP first (the fake ML calls the API back), then the fake ML, then the live service that
    // streams to it. Upgrades before the live service is up are refused.
    const app = createApp(rt);
    registerConsole(app, config);
    // The local stack's front door is the developer console.
    app.get('/', (c) => c.redirect('/console', 302));
    // The live service's AsyncAPI document, beside the REST API's /openapi.json.
    app.get('/asyncapi.json', (c) =>
      c.json(asyncApiDocument({ host: c.req.header('host') ?? new URL(url).host, protocol: 'ws' })),
    );
    // The published core ↔ ML contract, as the live service serves it.
    for (const [docPath, doc] of Object.entries(mlContractDocuments())) app.get(docPath, (c) => c.json(doc as object));
    // Requests go to the app from here on (the fake ML calls it back while starting); /healthz
    // says 200 only once everything is up.
    const appListener = getRequestListener(app.fetch);
    const starting = handler;
    let ready = false;
    handler = (req, res) =>
      !ready && req.url?.split('?')[0] === '/healthz' ? starting(req, res) : appListener(req, res);

    let mlUrl: string;
    if (externalMl) {
      mlUrl = externalMl;
      if (overrides)
        log.warn(
          'ML_SERVICE_URL: the in-process Pub/Sub substitute cannot reach another process; the ML service gets no recording.finalized (install gcloud: docs/local-stack.md)',
        );
      log.info({ url: mlUrl }, 'using the ML service at ML_SERVICE_URL (no fake ML, no fake batch worker)');
    } else {
      const ml = await step(
        'fake ML service started',
        () => startFakeMl({ port: config.ML_PORT, coreUrl: url, serviceToken: config.SERVICE_AUTH_TOKEN, config, log }),
        (m) => ({ url: m.url }),
      );
      stops.push(ml.stop);
      mlUrl = ml.url;
    }
    // The sweep below reads this coordination's instance marks: the live service writes them there.
    const liveService = createLiveService(rt, { mlUrl, coordination: rt.coordination });
    await step('live service up', () => liveService.start());
    live = liveService;
    stops.push(() => liveService.shutdown('shutdown'));

    // Webhook delivery, as each live instance runs it in the cloud (docs/webhooks.md).
    const webhooks = startWebhookDispatcher(rt);
    stops.push(() => webhooks.stop());

    const timer = setInterval(() => {
      runSweep(rt, { coordination: rt.coordination }).catch((err) => log.warn({ err: String(err) }, 'sweep failed'));
    }, config.RECORDING_GAP_SWEEP_INTERVAL_SECONDS * 1000);
    stops.push(async () => clearInterval(timer));

    ready = true;
    // CORE_URL, the project and the topic: what an ML service (and the conformance kit) needs.
    const forMl = {
      CORE_URL: url,
      GOOGLE_CLOUD_PROJECT: config.GOOGLE_CLOUD_PROJECT,
      PUBSUB_TOPIC_RECORDING_FINALIZED: config.PUBSUB_TOPIC_RECORDING_FINALIZED,
    };
    writeStackEnv(dataDir, {
      ...vars,
      ...forMl,
      DATABASE_URL: database.url,
      CORE_PORT: String(port),
      ML_SERVICE_URL: mlUrl,
    });
    const addresses = {
      url,
      console: `${url}/console`,
      docs: `${url}/docs`,
      ws: `${url.replace('http', 'ws')}/ws`,
      ml: externalMl ? `${mlUrl} (ML_SERVICE_URL)` : `${mlUrl} (fake)`,
      storage: vars.STORAGE_EMULATOR_HOST!,
      pubsub: overrides ? 'in-process substitute' : vars.PUBSUB_EMULATOR_HOST!,
      firestore: overrides ? 'in-process substitute' : vars.FIRESTORE_EMULATOR_HOST!,
      data_dir: dataDir,
    };
    const seconds = ((performance.now() - began) / 1000).toFixed(1);
    // On a terminal the banner alone (its fields would repeat it); in JSON the fields, for tools.
    if (format === 'pretty') log.info(readyBanner(addresses, seconds));
    else log.info({ ...addresses, ms: Math.round(performance.now() - began) }, 'local stack ready');
    return { config, rt, url, log, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function readyBanner(a: Record<string, string>, seconds: string): string {
  const rows = [
    ['REST API', a.url],
    ['console', a.console],
    ['API docs', a.docs],
    ['WebSocket', a.ws],
    ['ML', a.ml],
    [
      'storage',
      `${a.storage}   gcloud storage: CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=${a.storage.replace(/\/?$/, '/')} (docs/local-stack.md)`,
    ],
    ['Pub/Sub', a.pubsub],
    ['Firestore', a.firestore],
    ['data', a.data_dir],
  ];
  return [
    `local stack ready in ${seconds} s`,
    ...rows.map(([k, v]) => `    ${k.padEnd(10)} ${v}`),
    '    Ctrl-C stops everything',
  ].join('\n');
}

/** Listens, or fails naming the variable that chose the port. */
function listenOn(server: Server, variable: string, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(portError(variable, port, host, err)));
    server.listen(port, host, () => resolve());
  });
}

async function ensurePortFree(variable: string, port: number, host: string): Promise<void> {
  const probe = createServer();
  await listenOn(probe, variable, port, host);
  await new Promise((r) => probe.close(r));
}

function portError(variable: string, port: number, host: string, err: NodeJS.ErrnoException): Error {
  const why =
    err.code === 'EADDRINUSE'
      ? 'is already in use (another `npm start`?)'
      : err.code === 'EACCES'
        ? 'needs privileges (ports below 1024)'
        : err.code === 'EADDRNOTAVAIL'
          ? `is not available: HOST=${host} is not an address of this machine`
          : `cannot be used: ${err.message}`;
  return new ConfigError([`${variable}: port ${port} on ${host} ${why}; set ${variable} to a free port (0: any)`]);
}

/**
 * The running stack's settings, for a shell (`source .data/local-stack.env`: gcloud and the
 * Google clients then talk to the emulators) or a deployable unit run against the stack, e.g.
 * `source .data/local-stack.env; npx functions-framework --target=api --source=functions/dist`.
 */
function writeStackEnv(dataDir: string, vars: Record<string, string | undefined>) {
  const keys = [
    'APP_ENV',
    'DATABASE_URL',
    'PUBSUB_EMULATOR_HOST',
    'FIRESTORE_EMULATOR_HOST',
    'STORAGE_EMULATOR_HOST',
    'STORAGE_SIGNER_KEY_FILE',
    'STORAGE_BUCKET',
    'ML_SERVICE_URL',
    'IDENTITY_SECRET_KEY',
    'SERVICE_AUTH_TOKEN',
    'AUDIO_URL_SIGNING_KEY',
    'CORE_URL',
    'PUBSUB_TOPIC_RECORDING_FINALIZED',
  ];
  const http = (host: string | undefined) =>
    host && (/^https?:\/\//.test(host) ? host : `http://${host}`).replace(/\/?$/, '/');
  const all: Record<string, string | undefined> = {
    ...Object.fromEntries(keys.map((k) => [k, vars[k]])),
    // gcloud's own overrides: `gcloud storage ls`, `gcloud pubsub topics list` reach the emulators.
    CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE: http(vars.STORAGE_EMULATOR_HOST),
    CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB: http(vars.PUBSUB_EMULATOR_HOST),
    CLOUDSDK_API_ENDPOINT_OVERRIDES_FIRESTORE: http(vars.FIRESTORE_EMULATOR_HOST),
    GOOGLE_CLOUD_PROJECT: vars.GOOGLE_CLOUD_PROJECT ?? 'local-project',
    // The emulators take no credentials; gcloud then sends none (this shell is the stack's).
    CLOUDSDK_AUTH_DISABLE_CREDENTIALS: 'true',
    CLOUDSDK_CORE_PROJECT: vars.GOOGLE_CLOUD_PROJECT ?? 'local-project',
  };
  const quote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
  const lines = Object.entries(all)
    .filter(([, v]) => v)
    .map(([k, v]) => `export ${k}=${quote(v!)}`);
  writeFileSync(path.join(dataDir, 'local-stack.env'), `${lines.join('\n')}\n`, { mode: 0o600 });
}
