// Stand-ins for what a deployed unit's telemetry talks to: an OTLP/HTTP receiver keeping every
// JSON export it is sent (the collector sidecar, or Google's Telemetry API), and the metadata
// server Cloud Run and Cloud Functions give a process its service account's token from
// (google-auth-library reads GCE_METADATA_HOST). Both are real HTTP servers on 127.0.0.1.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpPost {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;

const flat = (attrs: { key: string; value: Record<string, unknown> }[] = []) =>
  Object.fromEntries(attrs.map((a) => [a.key, Object.values(a.value)[0]]));

export interface OtlpReceiver {
  url: string;
  posts: OtlpPost[];
  spans(): OtlpSpan[];
  /** Names of the metrics of every export so far, with their resources' attributes. */
  metrics(): { name: string; resource: Record<string, unknown> }[];
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const posts: OtlpPost[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', headers: req.headers, body: body.startsWith('{') ? JSON.parse(body) : body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const host = await listen(server);
  return {
    url: `http://${host}`,
    posts,
    spans: () =>
      posts
        .filter((p) => p.path === '/v1/traces')
        .flatMap((p) => p.body.resourceSpans ?? [])
        .flatMap((rs: any) =>
          rs.scopeSpans.flatMap((ss: any) =>
            ss.spans.map((s: any) => ({
              ...s,
              attributes: flat(s.attributes),
              resource: flat(rs.resource?.attributes),
            })),
          ),
        ),
    metrics: () =>
      posts
        .filter((p) => p.path === '/v1/metrics')
        .flatMap((p) => p.body.resourceMetrics ?? [])
        .flatMap((rm: any) =>
          rm.scopeMetrics.flatMap((sm: any) =>
            sm.metrics.map((m: any) => ({ name: m.name, resource: flat(rm.resource?.attributes) })),
          ),
        ),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface MetadataServer {
  /** host:port, for GCE_METADATA_HOST. */
  host: string;
  token: string;
  tokenRequests: number;
  close(): Promise<void>;
}

/** The few metadata paths google-auth-library asks for; answered as Google's server does (Metadata-Flavor: Google). */
export async function startMetadataServer(token = 'ya29.test-metadata-token'): Promise<MetadataServer> {
  const state = { tokenRequests: 0 };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://metadata').pathname;
    const headers = { 'metadata-flavor': 'Google' };
    if (req.headers['metadata-flavor'] !== 'Google') return void res.writeHead(403, headers).end();
    if (path === '/computeMetadata/v1/instance/service-accounts/default/token') {
      state.tokenRequests++;
      return void res
        .writeHead(200, { ...headers, 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: token, expires_in: 3599, token_type: 'Bearer' }));
    }
    if (path === '/computeMetadata/v1/universe/universe-domain')
      return void res.writeHead(200, headers).end('googleapis.com');
    if (path === '/computeMetadata/v1/project/project-id') return void res.writeHead(200, headers).end('test-project');
    if (path === '/computeMetadata/v1/instance' || path === '/computeMetadata/v1/')
      return void res.writeHead(200, headers).end('');
    res.writeHead(404, headers).end();
  });
  const host = await listen(server);
  return {
    host,
    token,
    get tokenRequests() {
      return state.tokenRequests;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
