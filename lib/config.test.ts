import { describe, expect, it } from 'vitest';
import { ConfigError, deriveTestSigningKey, loadConfig } from './config';

const base = {
  IDENTITY_SECRET_KEY: 'identity-secret-0123456789',
  SERVICE_AUTH_TOKEN: 'service-token-0123456789',
  AUDIO_URL_SIGNING_KEY: 'audio-signing-key-0123456789',
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('config', () => {
  it('should apply the spec defaults', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      APP_ENV: 'development',
      CORE_PORT: 4002,
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318',
      PUBSUB_EMULATOR_HOST: 'localhost:8085',
      // npm start runs the emulators it starts here: the Pub/Sub one where PUBSUB_EMULATOR_HOST points.
      PUBSUB_EMULATOR_PORT: 8085,
      FIRESTORE_EMULATOR_PORT: 8086,
      STORAGE_EMULATOR_PORT: 4443,
      RECORDING_SEGMENT_TARGET_MS: 2000,
      RECORDING_PROGRESS_EVERY_FRAMES: 100,
      RECORDING_PROGRESS_INTERVAL_SECONDS: 10,
      RECORDING_GAP_UPLOAD_DEADLINE_SECONDS: 1800,
      RECORDING_GAP_SWEEP_INTERVAL_SECONDS: 30,
      RECORDING_STOP_SETTLE_MS: 500,
      RECORDING_ML_START_TIMEOUT_SECONDS: 10,
      RECORDING_ML_DRAIN_TIMEOUT_SECONDS: 5,
      RECORDING_DISCONNECT_GRACE_SECONDS: 120,
      RECORDING_MAX_CHUNK_BYTES: 1048576,
      RECORDING_MAX_DURATION_SECONDS: 14400,
      RECORDING_AUDIO_URL_TTL_SECONDS: 900,
      RECORDING_MAX_UPLOAD_BYTES: 536870912,
      ML_PORT: 4003,
      MODEL_PROVIDER: 'provider_a',
      ML_CACHE_TTL_SECONDS: 3600,
      ML_TALKING_POINT_CADENCE_SEGMENTS: 4,
      ML_TALKING_POINT_CADENCE_SECONDS: 30,
      ML_TASK_CADENCE_SEGMENTS: 12,
      ML_SEGMENT_FEATURE_MAX_PER_SPEAKER: 8,
      ML_SEGMENT_FEATURE_DIMENSIONS: 192,
      ML_BACKPRESSURE_QUEUE_DEPTH: 64,
      ML_AUDIO_QUEUE_CAPACITY: 512,
      ML_INSIGHT_WARNING_GAP_FRAMES: 300,
      ML_DRAIN_TIMEOUT_SECONDS: 0.5,
      ML_INSIGHT_CONTEXT_SEGMENTS: 60,
      ML_NO_AUDIO_WINDOW_SECONDS: 10,
      ML_NO_AUDIO_RMS_THRESHOLD: 50,
      ML_NO_AUDIO_BATCH_FRAMES: 10,
      NEXT_PUBLIC_CORE_URL: 'http://localhost:4002',
      APP_PORT: 4001,
      STORAGE_BUCKET: 'local-audio',
      DATA_DIR: '.data',
    });
  });

  it('should not default the Pub/Sub emulator in production', () => {
    const c = loadConfig({
      ...base,
      APP_ENV: 'production',
      IDENTITY_JWKS_URL: 'https://id.example.com/jwks',
      IDENTITY_ISSUER: 'https://id.example.com',
    });
    expect(c.PUBSUB_EMULATOR_HOST).toBeUndefined();
  });

  it('should name the variable and the problem for bad values, all at once', () => {
    const problems = problemsOf({
      ...base,
      CORE_PORT: 'abc',
      RECORDING_SEGMENT_TARGET_MS: '-5',
      LOG_LEVEL: 'loud',
      APP_ENV: 'prod',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'APP_ENV',
      'CORE_PORT',
      'LOG_LEVEL',
      'RECORDING_SEGMENT_TARGET_MS',
    ]);
    expect(problemsOf({ ...base, ML_SEGMENT_FEATURE_DIMENSIONS: '256' })[0]).toMatch(
      /^ML_SEGMENT_FEATURE_DIMENSIONS: must be 192/,
    );
  });

  it('should refuse to start without AUDIO_URL_SIGNING_KEY outside APP_ENV=test', () => {
    const { AUDIO_URL_SIGNING_KEY: _, ...noKey } = base;
    expect(problemsOf({ ...noKey, APP_ENV: 'development' })).toContain(
      'AUDIO_URL_SIGNING_KEY: required when APP_ENV=development',
    );
    expect(
      problemsOf({ ...noKey, APP_ENV: 'staging', IDENTITY_JWKS_URL: 'https://x.example/jwks', IDENTITY_ISSUER: 'x' }),
    ).toContain('AUDIO_URL_SIGNING_KEY: required when APP_ENV=staging');
  });

  it('should derive the key from the service token through HMAC in test, with a warning, never the token itself', () => {
    const { AUDIO_URL_SIGNING_KEY: _, ...noKey } = base;
    const c = loadConfig({ ...noKey, APP_ENV: 'test' });
    expect(c.AUDIO_URL_SIGNING_KEY).toBe(deriveTestSigningKey(base.SERVICE_AUTH_TOKEN));
    expect(c.AUDIO_URL_SIGNING_KEY).not.toBe(base.SERVICE_AUTH_TOKEN);
    expect(c.AUDIO_URL_SIGNING_KEY).not.toContain(base.SERVICE_AUTH_TOKEN);
    expect(c.warnings.join()).toMatch(/derived from SERVICE_AUTH_TOKEN/);
    expect(c.warnings.join()).not.toContain(base.SERVICE_AUTH_TOKEN);
  });

  it('should use a given key in test without deriving', () => {
    expect(loadConfig({ ...base, APP_ENV: 'test' }).AUDIO_URL_SIGNING_KEY).toBe(base.AUDIO_URL_SIGNING_KEY);
  });

  it('should refuse a signing key equal to the service token', () => {
    expect(problemsOf({ ...base, AUDIO_URL_SIGNING_KEY: base.SERVICE_AUTH_TOKEN })).toContain(
      'AUDIO_URL_SIGNING_KEY: must not be the service token (SERVICE_AUTH_TOKEN)',
    );
    expect(problemsOf({ ...base, APP_ENV: 'test', AUDIO_URL_SIGNING_KEY: base.SERVICE_AUTH_TOKEN }).length).toBe(1);
  });

  it('should require the identity settings of the environment', () => {
    expect(
      problemsOf({ SERVICE_AUTH_TOKEN: base.SERVICE_AUTH_TOKEN, AUDIO_URL_SIGNING_KEY: base.AUDIO_URL_SIGNING_KEY }),
    ).toContain('IDENTITY_SECRET_KEY: required when APP_ENV=development (HS256 user tokens)');
    const prod = problemsOf({ ...base, APP_ENV: 'production' });
    expect(prod).toContain('IDENTITY_JWKS_URL: required when APP_ENV=production');
    expect(prod).toContain('IDENTITY_ISSUER: required when APP_ENV=production');
  });
});
