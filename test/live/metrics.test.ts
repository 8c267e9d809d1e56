// Metrics over OTLP/HTTP: a local receiver takes the JSON the exporter posts to /v1/metrics
// while a real REST request and a real recording through /ws run; the named
// instruments must arrive with values that match what was done.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import { TestClient, createMeeting, fileEnv, openTestDatabase, startInstance, token, type Instance } from './helpers';
import { until } from '../support/poll';

interface Point {
  attributes?: { key: string; value: Record<string, unknown> }[];
  asInt?: number | string;
  asDouble?: number;
  count?: number | string;
  sum?: number;
  min?: number;
  max?: number;
}
interface Metric {
  name: string;
  unit?: string;
  sum?: { dataPoints: Point[] };
  gauge?: { dataPoints: Point[] };
  histogram?: { dataPoints: Point[] };
}

let receiver: Server;
const posts: { path: string; type: string; authorization?: string; body: any }[] = [];
let database: OpenedDatabase;
let core: Instance;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      posts.push({
        path: req.url ?? '',
        type: req.headers['content-type'] ?? '',
        authorization: req.headers.authorization,
        body: body.startsWith('{') ? JSON.parse(body) : body,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  database = await openTestDatabase();
  core = await startInstance(database, {
    ...fileEnv(),
    ML_SERVICE_URL: 'http://127.0.0.1:9',
    OTEL_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_METRIC_EXPORT_INTERVAL: '300',
  });
}, 60_000);

afterAll(async () => {
  await core?.close();
  await database?.close();
  receiver?.close();
});

/** The metrics of the latest export (cumulative: it holds the totals so far). */
function latest(): Map<string, Metric> {
  const last = posts.filter((p) => p.path === '/v1/metrics').at(-1);
  const out = new Map<string, Metric>();
  for (const rm of last?.body.resourceMetrics ?? [])
    for (const sm of rm.scopeMetrics) for (const m of sm.metrics) out.set(m.name, m);
  return out;
}

const attrs = (p: Point): Record<string, unknown> =>
  Object.fromEntries((p.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
const value = (p: Point) => Number(p.asInt ?? p.asDouble);
const points = (m: Metric | undefined) => m?.sum?.dataPoints ?? m?.gauge?.dataPoints ?? m?.histogram?.dataPoints ?? [];
const total = (name: string) => points(latest().get(name)).reduce((n, p) => n + value(p), 0);

/** Polls the latest export until `ok`, naming what it last held when it times out. */
const untilExported = (what: string, ok: () => boolean) =>
  until(what, ok, {
    timeoutMs: 15_000,
    intervalMs: 100,
    context: () => `last export: ${[...latest().keys()].join(', ')}`,
  });

describe('metrics', () => {
  it('should export live, HTTP, database and outbox metrics over OTLP/HTTP JSON', async () => {
    const alice = await token(core.config, 'alice');
    const meetingId = await createMeeting(core, alice);

    const client = await TestClient.connect(core.wsUrl, alice);
    await client.start(meetingId);
    const sent = 30;
    for (let seq = 0; seq < sent; seq++) client.frame(seq);
    await client.acked(meetingId, sent - 1);
    // While the take and the connection are open.
    await untilExported(
      'open take and connection',
      () => total('live.takes.open') === 1 && total('live.websocket.connections') === 1,
    );

    await client.stop(meetingId);
    client.close();
    await untilExported(
      'take and connection closed',
      () => total('live.takes.open') === 0 && total('live.websocket.connections') === 0,
    );

    const m = latest();
    expect(posts.find((p) => p.path === '/v1/metrics')?.type).toContain('application/json');
    // OTEL_EXPORTER_OTLP_AUTH unset (none): plain OTLP for a collector, no credentials sent
    // (with google, test/deploy/targets.test.ts sees the service account's token on every export).
    expect(posts.filter((p) => p.authorization !== undefined)).toEqual([]);
    expect(m.get('live.frames.received')?.sum?.dataPoints[0]).toBeDefined();
    expect(total('live.frames.received')).toBe(sent);
    expect(total('live.frames.stored')).toBeGreaterThanOrEqual(sent);

    // Every frame was acknowledged by a progress event; none can be older than the test.
    const ack = m.get('live.ack.latency')!.histogram!.dataPoints[0];
    expect(m.get('live.ack.latency')!.unit).toBe('ms');
    expect(Number(ack.count)).toBeGreaterThanOrEqual(1);
    expect(ack.min!).toBeGreaterThanOrEqual(0);
    expect(ack.max!).toBeLessThan(30_000);

    // By route template and status, never by path.
    const http: Record<string, unknown>[] = points(m.get('http.server.request.duration')).map((p) => ({
      ...attrs(p),
      count: Number(p.count),
    }));
    expect(http).toContainEqual(
      expect.objectContaining({
        'http.route': '/meetings',
        'http.request.method': 'POST',
        'http.response.status_code': 201,
      }),
    );
    expect(http.every((p) => !String(p['http.route']).includes(meetingId))).toBe(true);

    // The recording's transactions waited for connections (a handful of ms at most here).
    expect(Number(m.get('db.client.connection.wait_time')!.histogram!.dataPoints[0].count)).toBeGreaterThan(0);
    expect(points(m.get('db.client.connection.pending_requests'))).toHaveLength(1);

    // Read from the outbox at export: published at once here, so nothing old is left.
    expect(points(m.get('outbox.unpublished'))).toHaveLength(1);
    expect(total('outbox.oldest_unpublished_age')).toBeLessThan(60);
  });

  it('should report unpublished outbox rows and the age of the oldest', async () => {
    const { rows } = await core.rt.db.query('test.seed', `SELECT user_id FROM event_outbox LIMIT 1`);
    // An old row nobody published (what a publish failure leaves for the sweep).
    await core.rt.db.query(
      'test.unpublished',
      `INSERT INTO event_outbox (user_id, seq, event_type, payload, created_at)
       SELECT $1, max(seq) + 1, 'meeting.changed', '{}'::jsonb, now() - interval '5 minutes' FROM event_outbox WHERE user_id = $1`,
      [rows[0].user_id],
    );
    await untilExported(
      'the old row in the outbox gauges',
      () => total('outbox.unpublished') >= 1 && total('outbox.oldest_unpublished_age') >= 300,
    );
  });
});
