// OpenTelemetry metrics: the instruments are created once, on the process's MeterProvider, and
// exported over OTLP/HTTP (JSON) every OTEL_METRIC_EXPORT_INTERVAL ms when OTEL_ENABLED, to a
// collector or, with Google credentials, to Cloud Monitoring's Telemetry API (otlp.ts). Until
// initMetrics runs (and when export is off) they are no-ops: the metrics API has no proxy
// provider, so instruments made before a provider exists would stay no-ops for good.
import { createNoopMeter, metrics, type Meter } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import type { Resource } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type pg from 'pg';
import type { Config } from '../config';
import { otlpTarget, type OtlpConfig } from './otlp';

// Milliseconds, up to a minute: an ack waits up to RECORDING_PROGRESS_INTERVAL_SECONDS (10 s) by design.
const MS_BUCKETS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 20_000, 30_000, 60_000];

/** Pools of this process (a test process opens several); their waiting callers are summed. */
const pools = new Set<pg.Pool>();
export interface OutboxBacklog {
  unpublished: number;
  oldestAgeSeconds: number;
}
/** Readers of the outbox backlog (live instances register one; any one answers for the shared database). */
const outboxReaders = new Set<() => Promise<OutboxBacklog>>();

function instrumentsOf(meter: Meter) {
  const ms = (name: string, description: string) =>
    meter.createHistogram(name, { description, unit: 'ms', advice: { explicitBucketBoundaries: MS_BUCKETS } });
  const made = {
    framesReceived: meter.createCounter('live.frames.received', {
      description: 'Audio frames routed to a take (duplicates and refused ones included)',
    }),
    framesStored: meter.createCounter('live.frames.stored', {
      description: 'Audio frames written (object and manifest row committed) by this instance',
    }),
    ackLatency: ms(
      'live.ack.latency',
      "From a frame's arrival to the progress event that first covers it (highest_contiguous_sequence)",
    ),
    takesOpen: meter.createUpDownCounter('live.takes.open', { description: 'Takes (recorders) this instance holds' }),
    wsConnections: meter.createUpDownCounter('live.websocket.connections', {
      description: 'Open WebSocket connections',
    }),
    mlRejected: meter.createCounter('live.ml.messages.rejected', {
      description: 'ML → core socket messages the core could not use, by reason',
    }),
    httpDuration: ms('http.server.request.duration', 'REST request duration by route template and status'),
    dbConnectWait: ms('db.client.connection.wait_time', 'Wait for a pool connection (transactions)'),
  };
  meter
    .createObservableGauge('db.client.connection.pending_requests', {
      description: 'Callers waiting for a pool connection',
    })
    .addCallback((r) => r.observe([...pools].reduce((n, p) => n + p.waitingCount, 0)));
  // Read at each export (one indexed query a minute per process), by the always-on live service.
  const unpublished = meter.createObservableGauge('outbox.unpublished', {
    description: 'Outbox events not yet published',
  });
  const oldest = meter.createObservableGauge('outbox.oldest_unpublished_age', {
    description: 'Age of the oldest unpublished outbox event',
    unit: 's',
  });
  meter.addBatchObservableCallback(
    async (r) => {
      const read = outboxReaders.values().next().value;
      const backlog = await read?.().catch(() => null); // database down: no reading, not a wrong one
      if (!backlog) return;
      r.observe(unpublished, backlog.unpublished);
      r.observe(oldest, backlog.oldestAgeSeconds);
    },
    [unpublished, oldest],
  );
  return made;
}

let provider: MeterProvider | null = null;
let current = instrumentsOf(createNoopMeter());

/** The process's instruments (no-ops before initMetrics). */
export const instruments = () => current;

/** Once per process, from initTelemetry. */
export function initMetrics(
  config: Pick<Config, 'OTEL_ENABLED' | 'OTEL_METRIC_EXPORT_INTERVAL'> & OtlpConfig,
  resource: Resource,
) {
  if (provider || !config.OTEL_ENABLED) return;
  const target = otlpTarget(config, 'metrics');
  const exporter = new OTLPMetricExporter(target);
  const interval = config.OTEL_METRIC_EXPORT_INTERVAL;
  provider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter,
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(interval, target.timeoutMillis),
      }),
    ],
  });
  metrics.setGlobalMeterProvider(provider);
  current = instrumentsOf(provider.getMeter('meeting-intelligence'));
}

/** Exports now (shutdown, tests); failures are dropped. */
export async function flushMetrics() {
  await provider?.forceFlush().catch(() => {});
}

export function watchPool(pool: pg.Pool): () => void {
  pools.add(pool);
  return () => pools.delete(pool);
}

export function watchOutbox(read: () => Promise<OutboxBacklog>): () => void {
  outboxReaders.add(read);
  return () => outboxReaders.delete(read);
}
