// The one place environment variables are read. Every variable of the spec's Limits tables and
// the credential variables, with the spec's defaults; parsed once at start. A bad value fails
// start-up with every problem listed, each naming its variable.
import { createHmac } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { z } from 'zod';

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const num = (def: number, min = 0) => z.coerce.number().min(min).default(def);
const optionalText = z.string().min(1).optional();

/** Every variable the services read (exported for the docs test: each must be documented). */
export const configSchema = z.object({
  // Common
  APP_ENV: z.enum(['development', 'test', 'staging', 'production']).default('development'),
  DATABASE_URL: optionalText,
  DB_POOL_MAX: int(10, 1),
  DB_STATEMENT_TIMEOUT_MS: int(15_000),
  DB_LOCK_TIMEOUT_MS: int(5_000),
  DB_CONNECT_TIMEOUT_MS: int(5_000, 1),
  // Cloud SQL IAM database authentication: each new connection presents the service account's token.
  DB_IAM_AUTH: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  PUBSUB_EMULATOR_HOST: optionalText,
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().default('http://localhost:4318'),
  OTEL_ENABLED: z.enum(['true', 'false', '1', '0']).optional(),
  // How often metrics are exported (ms); the OpenTelemetry SDK's own variable name and default.
  OTEL_METRIC_EXPORT_INTERVAL: int(60_000, 100),
  // The SDK's own variable (for its traceidratio sampler): the share of the traces this process
  // starts that are recorded and exported; a caller's sampled traceparent is always followed.
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  // none: plain OTLP to a collector; google: Google credentials on every export (the Telemetry API, lib/telemetry/otlp.ts).
  OTEL_EXPORTER_OTLP_AUTH: z.enum(['none', 'google']).default('none'),
  // The SDK's own variable: extra resource attributes, key=value pairs separated by commas (values URL-encoded).
  OTEL_RESOURCE_ATTRIBUTES: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^[^=\s]+=[^=]*$/, 'must be key=value pairs separated by commas')))
    .transform(
      (pairs) =>
        Object.fromEntries(pairs.map((p) => p.split('=').map((x) => decodeURIComponent(x.trim())))) as Record<
          string,
          string
        >,
    )
    .optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  // Read by the local stack's logger (emulators/log.ts); the deployed services always write JSON.
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  // Core service
  CORE_PORT: int(4002, 0).pipe(z.number().max(65535)),
  // The interface the local stack listens on (its development token endpoint mints any user).
  HOST: z.string().min(1).default('127.0.0.1'),
  STORAGE_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/, 'must be a valid bucket name')
    .default('local-audio'),
  DATA_DIR: z.string().min(1).default('.data'),
  PUBLIC_BASE_URL: z.string().url().optional(),
  GOOGLE_CLOUD_PROJECT: z.string().min(1).default('local-project'),
  FIRESTORE_EMULATOR_HOST: optionalText,
  // Where `npm start` runs each emulator it starts (the *_HOST variable unset): fixed, so gcloud
  // and other clients keep their address across restarts; 0: any free port.
  PUBSUB_EMULATOR_PORT: int(8085, 0).pipe(z.number().max(65535)),
  FIRESTORE_EMULATOR_PORT: int(8086, 0).pipe(z.number().max(65535)),
  STORAGE_EMULATOR_PORT: int(4443, 0).pipe(z.number().max(65535)),
  STORAGE_EMULATOR_HOST: optionalText,
  STORAGE_SIGNER_KEY_FILE: optionalText,
  PUBSUB_TOPIC_EVENTS: z.string().min(1).default('events'),
  PUBSUB_TOPIC_RECORDING_FINALIZED: z.string().min(1).default('recording.finalized'),
  ML_SERVICE_URL: z.string().url().default('http://localhost:4003'),
  API_MAX_JSON_BYTES: int(1_048_576, 1024),
  API_MAX_BULK_JSON_BYTES: int(33_554_432, 1024),
  // Comma list of browser origins allowed to call the API (CORS).
  CORS_ALLOWED_ORIGINS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .url()
          .refine((o) => new URL(o).origin === o, 'must be an origin: scheme://host[:port], nothing after'),
      ),
    )
    .optional(),
  FEATURE_FLAGS_CACHE_SECONDS: num(30),
  // How long an api instance trusts a user's cached routes while no hello bumped them (0: never).
  EVENT_ROUTES_CACHE_SECONDS: num(30, 0),
  // Outbox events are kept this long (replay by last_seq is promised for 24 h).
  EVENT_RETENTION_HOURS: num(48, 24),
  // Soft-deleted meetings are purged by the sweep (rows, objects, voice samples) after this long.
  MEETING_PURGE_AFTER_DAYS: int(30, 1),
  // Voice matches (bench/voice.ts measures both on clustered and uniform vectors).
  VOICE_MATCH_EF_SEARCH: int(40, 1).pipe(z.number().max(1000)),
  VOICE_MATCH_EXACT_BELOW_SIMILARITY: num(0.4).pipe(z.number().max(1)),
  // GET /meetings/{id}/speaker-labels suggests people at least this similar to an unassigned label's voice.
  VOICE_SUGGEST_MIN_SIMILARITY: num(0.5).pipe(z.number().max(1)),
  // Webhooks (decisions.md section 7): the pinned retry schedule (seconds after each failed attempt),
  // the failing time after which an endpoint is disabled, and how often the dispatcher looks for work.
  // Tests shorten the first two; production keeps the pinned values.
  WEBHOOK_RETRY_SCHEDULE_SECONDS: z
    .string()
    .default('5,300,1800,7200,18000,36000,36000')
    .transform((s) => s.split(',').map((x) => Number(x.trim())))
    .pipe(z.array(z.number().min(0)).min(1, 'must list at least one delay')),
  WEBHOOK_DISABLE_AFTER_SECONDS: num(5 * 24 * 3600),
  WEBHOOK_POLL_MS: int(1000, 10),
  // Fairness and rotation (decisions.md section 8): attempts of one user's endpoints in flight per
  // dispatcher, and how long a rotated-out secret still signs beside the new one.
  WEBHOOK_MAX_IN_FLIGHT_PER_USER: int(8, 1),
  WEBHOOK_SECRET_OVERLAP_SECONDS: int(86_400, 0),
  // Live service
  LIVE_CONNECTION_LIFETIME_SECONDS: int(3300, 1),
  LIVE_MAX_CONNECTIONS_PER_USER: int(20, 1),
  /** A hello further behind than this many events gets ResyncRequired too_far_behind, not a replay. */
  LIVE_REPLAY_MAX_EVENTS: int(5_000, 1),
  // A take's frames go to the ML service together this often (one socket write); 0: each at once.
  LIVE_ML_FORWARD_MS: int(300).pipe(z.number().max(2000)),
  LIVE_MAX_FRAME_BYTES: int(65_536, 16),
  LIVE_SEND_QUEUE_BYTES: int(4_194_304, 1024),
  LIVE_HELLO_TIMEOUT_SECONDS: num(10, 0.1),
  // The one liveness TTL: a live instance's heartbeat keeps its Firestore document alive this long
  // (beating at least every third of it), and with it its leases and presence; the sweep deletes
  // the topic of an instance whose document lapsed (lib/fanout/liveness.ts). The default is
  // OWNER_STALE_SECONDS: a killed instance's takes are free as soon as its rows look stale.
  LIVE_INSTANCE_TTL_SECONDS: num(30, 1),
  // Processes of the Cloud Run entry (run-services/live/server.ts), each a full live instance; 1: no fork.
  LIVE_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(() => availableParallelism()),
  // Recording (core)
  RECORDING_SEGMENT_TARGET_MS: int(2000, 100),
  RECORDING_PROGRESS_EVERY_FRAMES: int(100, 1),
  RECORDING_PROGRESS_INTERVAL_SECONDS: num(10, 0.1),
  RECORDING_GAP_UPLOAD_DEADLINE_SECONDS: int(1800),
  RECORDING_GAP_SWEEP_INTERVAL_SECONDS: num(30, 0.1),
  RECORDING_STOP_SETTLE_MS: int(500),
  // The core's bounds on its calls to the ML service (decisions.md section 8): POST /streaming, the drain.
  RECORDING_ML_START_TIMEOUT_SECONDS: num(10, 0.1),
  RECORDING_ML_DRAIN_TIMEOUT_SECONDS: num(5),
  RECORDING_DISCONNECT_GRACE_SECONDS: num(120),
  RECORDING_MAX_CHUNK_BYTES: int(1_048_576, 1),
  RECORDING_MAX_DURATION_SECONDS: int(14_400, 1),
  RECORDING_AUDIO_URL_TTL_SECONDS: int(900, 1),
  RECORDING_MAX_UPLOAD_BYTES: int(536_870_912, 1),
  // The ML batch pass's claim is a lease this long (renewed with ML-Claim); after this many
  // claims expired the sweep gives the take up (failed) instead of offering it again.
  ML_BATCH_CLAIM_LEASE_SECONDS: int(900, 1),
  ML_BATCH_MAX_ATTEMPTS: int(3, 1),
  // Account export (POST /me/exports, docs/exports.md)
  ACCOUNT_EXPORT_URL_TTL_SECONDS: int(900, 1),
  ACCOUNT_EXPORT_RETENTION_HOURS: num(72, 1),
  ACCOUNT_EXPORT_LEASE_SECONDS: int(120, 1),
  // ML service (read by the fake ML service of the local stack)
  ML_PORT: int(4003, 0).pipe(z.number().max(65535)),
  MODEL_PROVIDER: z.enum(['provider_a', 'provider_b']).default('provider_a'),
  ML_CACHE_TTL_SECONDS: int(3600),
  ML_TALKING_POINT_CADENCE_SEGMENTS: int(4, 1),
  ML_TALKING_POINT_CADENCE_SECONDS: num(30),
  ML_TASK_CADENCE_SEGMENTS: int(12, 1),
  ML_SEGMENT_FEATURE_MAX_PER_SPEAKER: int(8),
  ML_SEGMENT_FEATURE_DIMENSIONS: z.coerce
    .number()
    .int()
    .default(192)
    .pipe(z.literal(192, { message: 'must be 192: the core columns are vector(192)' })),
  ML_BACKPRESSURE_QUEUE_DEPTH: int(64, 1),
  ML_AUDIO_QUEUE_CAPACITY: int(512, 1),
  ML_INSIGHT_WARNING_GAP_FRAMES: int(300, 1),
  ML_DRAIN_TIMEOUT_SECONDS: num(0.5),
  ML_INSIGHT_CONTEXT_SEGMENTS: int(60),
  ML_NO_AUDIO_WINDOW_SECONDS: num(10, 0.1),
  ML_NO_AUDIO_RMS_THRESHOLD: num(50),
  ML_NO_AUDIO_BATCH_FRAMES: int(10, 1),
  // App
  NEXT_PUBLIC_CORE_URL: z.string().url().default('http://localhost:4002'),
  APP_PORT: int(4001, 0).pipe(z.number().max(65535)),
  // Credentials (values are secrets; never logged)
  IDENTITY_SECRET_KEY: optionalText,
  IDENTITY_PUBLISHABLE_KEY: optionalText,
  NEXT_PUBLIC_IDENTITY_PUBLISHABLE_KEY: optionalText,
  IDENTITY_JWKS_URL: z.string().url().optional(),
  IDENTITY_ISSUER: optionalText,
  IDENTITY_AUDIENCE: optionalText,
  SERVICE_AUTH_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  // Rotation without downtime: the previous shared token, still accepted until it is removed.
  SERVICE_AUTH_TOKEN_PREVIOUS: z.string().min(16, 'must be at least 16 characters').optional(),
  // Staging/production: Google-signed ID tokens of these service accounts (the ML's), audience
  // SERVICE_ID_TOKEN_AUDIENCE (default PUBLIC_BASE_URL), are service credentials.
  ML_SERVICE_ACCOUNT_EMAILS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
    ),
  SERVICE_ID_TOKEN_AUDIENCE: z.string().url().optional(),
  GOOGLE_ID_TOKEN_CERTS_URL: z.string().url().default('https://www.googleapis.com/oauth2/v1/certs'),
  AUDIO_URL_SIGNING_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  PROVIDER_A_API_KEY: optionalText,
  PROVIDER_B_API_KEY: optionalText,
});

type Parsed = z.infer<typeof configSchema>;
export type Config = Omit<
  Parsed,
  'SERVICE_AUTH_TOKEN' | 'AUDIO_URL_SIGNING_KEY' | 'PUBLIC_BASE_URL' | 'OTEL_ENABLED' | 'CORS_ALLOWED_ORIGINS'
> & {
  CORS_ALLOWED_ORIGINS: string[];
  PUBLIC_BASE_URL: string;
  OTEL_ENABLED: boolean;
  SERVICE_AUTH_TOKEN: string;
  AUDIO_URL_SIGNING_KEY: string;
  /** Things start-up should log as warnings (never containing secret values). */
  warnings: string[];
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}

/** The derivation the spec allows in APP_ENV=test only: HMAC of the service token, never the token. */
export function deriveTestSigningKey(serviceToken: string): string {
  return createHmac('sha256', serviceToken).update('audio-url-signing-key').digest('base64url');
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings count as unset, as in most deployment tools.
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = configSchema.safeParse(input);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const c = result.data;
  const problems: string[] = [];
  const warnings: string[] = [];
  const local = c.APP_ENV === 'development' || c.APP_ENV === 'test';

  if (!c.SERVICE_AUTH_TOKEN) problems.push('SERVICE_AUTH_TOKEN: required');
  if (local && !c.IDENTITY_SECRET_KEY)
    problems.push(`IDENTITY_SECRET_KEY: required when APP_ENV=${c.APP_ENV} (HS256 user tokens)`);
  if (!local && !c.IDENTITY_JWKS_URL) problems.push(`IDENTITY_JWKS_URL: required when APP_ENV=${c.APP_ENV}`);
  if (!local && !c.IDENTITY_ISSUER) problems.push(`IDENTITY_ISSUER: required when APP_ENV=${c.APP_ENV}`);

  let signingKey = c.AUDIO_URL_SIGNING_KEY;
  if (!signingKey) {
    if (c.APP_ENV === 'test' && c.SERVICE_AUTH_TOKEN) {
      signingKey = deriveTestSigningKey(c.SERVICE_AUTH_TOKEN);
      warnings.push('AUDIO_URL_SIGNING_KEY is unset: derived from SERVICE_AUTH_TOKEN through HMAC (APP_ENV=test only)');
    } else if (c.APP_ENV !== 'test') {
      problems.push(`AUDIO_URL_SIGNING_KEY: required when APP_ENV=${c.APP_ENV}`);
    }
  } else if (signingKey === c.SERVICE_AUTH_TOKEN) {
    problems.push('AUDIO_URL_SIGNING_KEY: must not be the service token (SERVICE_AUTH_TOKEN)');
  }
  if (c.IDENTITY_SECRET_KEY && c.IDENTITY_SECRET_KEY === c.SERVICE_AUTH_TOKEN) {
    problems.push('IDENTITY_SECRET_KEY: must differ from SERVICE_AUTH_TOKEN');
  }
  if (problems.length) throw new ConfigError(problems);

  return Object.freeze({
    ...c,
    // The spec's default applies to the local stack only; production talks to real Pub/Sub.
    PUBSUB_EMULATOR_HOST: c.PUBSUB_EMULATOR_HOST ?? (local ? 'localhost:8085' : undefined),
    PUBLIC_BASE_URL: c.PUBLIC_BASE_URL ?? `http://localhost:${c.CORE_PORT}`,
    // The browser app's local address; in the cloud only what is set.
    CORS_ALLOWED_ORIGINS: c.CORS_ALLOWED_ORIGINS ?? (local ? [`http://localhost:${c.APP_PORT}`] : []),
    // Spans are exported everywhere but in tests unless said otherwise.
    OTEL_ENABLED:
      c.OTEL_ENABLED === undefined ? c.APP_ENV !== 'test' : c.OTEL_ENABLED === 'true' || c.OTEL_ENABLED === '1',
    SERVICE_AUTH_TOKEN: c.SERVICE_AUTH_TOKEN!,
    AUDIO_URL_SIGNING_KEY: signingKey!,
    warnings,
  });
}
