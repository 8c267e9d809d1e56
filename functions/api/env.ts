// The Hono environment of the REST API: what every handler can read from the context.
import type { RequestIdVariables } from 'hono/request-id';
import type { Authenticator } from '@mi/lib/adapters/auth';
import type { Bus } from '@mi/lib/adapters/bus';
import type { Config } from '@mi/lib/config';
import type { Database } from '@mi/lib/db/pool';
import type { User } from '@mi/lib/repositories/users';
import type { EventPublisher } from '@mi/lib/events/outbox';
import type { FeatureFlags } from '@mi/lib/adapters/flags';
import type { Logger } from '@mi/lib/telemetry/log';
import type { ObjectStore } from '@mi/lib/adapters/storage';

/** The adapters the API runs on, built once per process (the Runtime of lib/adapters/runtime.ts). */
export interface AppDeps {
  config: Config;
  log: Logger;
  db: Database;
  auth: Authenticator;
  events: EventPublisher;
  store: ObjectStore;
  flags: FeatureFlags;
  /** Publishes an upload's `recording.finalized` (the ML batch pass). */
  bus: Bus;
}

/** Who is calling. Service calls act on any user's records (userId null). */
export type Principal = { kind: 'user'; userId: string; user: User } | { kind: 'service'; userId: null };

/** The key a request carries, claimed by `commit` in its transaction (middleware/idempotency.ts). */
export interface IdempotencyClaim {
  principal: string;
  key: string;
  method: string;
  path: string;
  /** sha256 of method, path and body: a different request with the same key is refused. */
  hash: string;
}

export type AppEnv = {
  Variables: RequestIdVariables & {
    deps: AppDeps;
    principal: Principal;
    clientId: string | null;
    trace: Record<string, string>;
    log: Logger;
    idempotency?: IdempotencyClaim;
  };
};
