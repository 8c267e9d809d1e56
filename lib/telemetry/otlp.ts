// Where the OTLP/HTTP exporters of telemetry.ts and metrics.ts send, and with which headers.
// OTEL_EXPORTER_OTLP_AUTH=none: plain OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (the live service's
// collector sidecar). google: every export carries the process's Google credentials (Application
// Default Credentials; on Cloud Run and Cloud Functions the service account's token from the
// metadata server, refreshed by google-auth-library before it expires), for Google's Telemetry
// API (https://telemetry.googleapis.com), which takes OTLP from the process itself: that is how
// the api and sweep functions, which cannot have a collector, export (docs/deployment.md).
import { randomUUID } from 'node:crypto';
import type { TracerProvider } from '@opentelemetry/api';
import type { GoogleAuth } from 'google-auth-library';
import type { Config } from '../config';

export type OtlpConfig = Pick<
  Config,
  'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_AUTH' | 'OTEL_RESOURCE_ATTRIBUTES' | 'GOOGLE_CLOUD_PROJECT'
>;

export interface OtlpTarget {
  url: string;
  timeoutMillis: number;
  /** Evaluated before every export (the OTLP exporters' HeadersFactory). */
  headers?: () => Promise<Record<string, string>>;
}

/**
 * Where the preload (telemetry-register.ts) leaves its instrumentations for initTelemetry: they
 * are bundled with their own copy of @opentelemetry/api, whose proxy tracer provider never learns
 * of the provider the application's copy sets, so initTelemetry hands it to them itself.
 */
export const INSTRUMENTATIONS = Symbol.for('meeting-intelligence.otel.instrumentations');

export interface PreloadedInstrumentation {
  instrumentationName: string;
  setTracerProvider(provider: TracerProvider): void;
}

export function preloadedInstrumentations(): PreloadedInstrumentation[] {
  return (globalThis as Record<symbol, PreloadedInstrumentation[] | undefined>)[INSTRUMENTATIONS] ?? [];
}

let auth: Promise<GoogleAuth> | null = null;

/** Authorization for Google APIs, fetched per export (cached and refreshed by google-auth-library). */
async function googleHeaders(): Promise<Record<string, string>> {
  try {
    // Loaded only where it is used: the local stack and the tests never import it.
    auth ??= import('google-auth-library').then(
      ({ GoogleAuth }) => new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] }),
    );
    return Object.fromEntries(await (await auth).getRequestHeaders());
  } catch {
    // No credentials: this export goes without and is refused (401), like any failed export it is dropped.
    return {};
  }
}

export function otlpTarget(config: OtlpConfig, signal: 'traces' | 'metrics'): OtlpTarget {
  const url = `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/${signal}`;
  // A sidecar on localhost answers at once; a Google API across the internet, with a token fetch first, may not.
  return config.OTEL_EXPORTER_OTLP_AUTH === 'google'
    ? { url, timeoutMillis: 10_000, headers: googleHeaders }
    : { url, timeoutMillis: 2000 };
}

/**
 * This process's resource attributes. OTEL_RESOURCE_ATTRIBUTES may name the service (the two
 * function targets share one bundle and one runtime name) and add others (cloud.region).
 */
export function resourceAttributes(config: OtlpConfig, serviceName: string): Record<string, string> {
  return {
    'service.name': serviceName,
    ...config.OTEL_RESOURCE_ATTRIBUTES,
    // One per process: concurrent function instances and the live service's workers would
    // otherwise write the same time series (Cloud Monitoring refuses such points).
    'service.instance.id': randomUUID(),
    ...(config.OTEL_EXPORTER_OTLP_AUTH === 'google' ? { 'gcp.project_id': config.GOOGLE_CLOUD_PROJECT } : {}),
  };
}
