// Builds the adapters both deployables run on from the parsed config, once per process.
import { createAuthenticator, type Authenticator } from './auth';
import { createBus, type Bus } from './bus';
import type { Config } from '../config';
import { createCoordination, type Coordination } from './coordination';
import type { Database } from '../db/pool';
import { createEventPublisher, type EventPublisher } from '../events/outbox';
import { RouteCache } from '../fanout/routes';
import { createFeatureFlags, type FeatureFlags } from './flags';
import { createLogger, type Logger } from '../telemetry/log';
import { createObjectStore, type ObjectStore } from './storage';
import { flushTelemetry, initTelemetry } from '../telemetry/tracing';

export interface Runtime {
  config: Config;
  log: Logger;
  db: Database;
  auth: Authenticator;
  bus: Bus;
  events: EventPublisher;
  store: ObjectStore;
  flags: FeatureFlags;
  /** Live-session coordination (Firestore): recording leases, connection presence. */
  coordination: Coordination;
  close(): Promise<void>;
}

/** Adapters that replace the cloud-backed ones (the local stack's in-process substitutes). */
export type RuntimeOverrides = Partial<Pick<Runtime, 'bus' | 'coordination' | 'flags'>>;

export function createRuntime(
  config: Config,
  db: Database,
  opts: { log?: Logger; name?: string; overrides?: RuntimeOverrides; service?: 'api' | 'live' | 'sweep' } = {},
): Runtime {
  const log =
    opts.log ??
    createLogger({ level: config.LOG_LEVEL, name: opts.name ?? 'core', project: config.GOOGLE_CLOUD_PROJECT });
  for (const w of config.warnings) log.warn(w);
  initTelemetry(config, opts.name ?? 'core');
  const bus =
    opts.overrides?.bus ??
    createBus({ projectId: config.GOOGLE_CLOUD_PROJECT, emulatorHost: config.PUBSUB_EMULATOR_HOST, log });
  const store = createObjectStore({
    bucket: config.STORAGE_BUCKET,
    emulatorHost: config.STORAGE_EMULATOR_HOST,
    signerKeyFile: config.STORAGE_SIGNER_KEY_FILE,
    projectId: config.GOOGLE_CLOUD_PROJECT,
  });
  const flags =
    opts.overrides?.flags ??
    createFeatureFlags({
      projectId: config.GOOGLE_CLOUD_PROJECT,
      emulatorHost: config.FIRESTORE_EMULATOR_HOST,
      cacheTtlMs: config.FEATURE_FLAGS_CACHE_SECONDS * 1000,
    });
  // Collection names match the Terraform TTL policies (infra/modules/firestore).
  const coordination =
    opts.overrides?.coordination ??
    createCoordination({
      projectId: config.GOOGLE_CLOUD_PROJECT,
      emulatorHost: config.FIRESTORE_EMULATOR_HOST,
      collectionPrefix: 'live_',
    });
  const routeCache = new RouteCache(
    (userId) => coordination.presenceInstances(userId),
    config.EVENT_ROUTES_CACHE_SECONDS * 1000,
  );
  return {
    config,
    log,
    db,
    auth: createAuthenticator(config),
    bus,
    // Where presence says the user's connections are (a live instance routes its own events itself).
    events: createEventPublisher({
      // Marks rows published for any user: the service's work (issue 38).
      db: db.as({ service: opts.service ?? 'api' }),
      bus,
      topic: config.PUBSUB_TOPIC_EVENTS,
      log,
      routes: (userId, version) => routeCache.of(userId, version),
      quiet: (userId) => routeCache.quiet(userId),
    }),
    store,
    flags,
    coordination,
    async close() {
      await flushTelemetry();
      await bus.close();
      await flags.close();
      await coordination.close();
    },
  };
}
