// The OpenAPI 3.1 document (generated from the routes' zod schemas) and an interactive docs
// page served from the swagger-ui-dist package (no CDN).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppDeps, AppEnv } from './env';
import { eventComponents } from './events-doc';

const require = createRequire(import.meta.url);
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js']);

/** The operations' groups, in the order the docs show them; every operation names one of these. */
export const TAGS = [
  { name: 'users', description: 'The calling user and their own person record.' },
  { name: 'meetings', description: 'Meetings: the root of everything recorded, transcribed and summarised.' },
  { name: 'recording', description: 'Live takes recorded over the WebSocket: state, coverage, history, gap uploads, takes.' },
  { name: 'audio', description: 'Uploaded and recorded meeting audio: upload, signed links, streaming.' },
  { name: 'transcriptions', description: 'Transcriptions and their segments, written by the ML service; exports and corrections.' },
  { name: 'talking-points', description: 'Talking points the ML service finds during a meeting.' },
  { name: 'topics', description: 'Topics of a meeting, from its synthesis.' },
  { name: 'synthesis', description: "A meeting's synthesis (summary, key points, topics), written by the ML service." },
  { name: 'people', description: 'People the user meets, their voice models, speaker-label assignments and voice matches.' },
  { name: 'tasks', description: 'Tasks from meetings or made by hand, nested by parent_task_id.' },
  { name: 'sub-tasks', description: 'Legacy sub-tasks of a task.' },
  { name: 'notes', description: 'Notes about a meeting, person or task.' },
  { name: 'threads', description: 'AI chat threads and their messages.' },
  { name: 'tags', description: "The user's tags." },
  { name: 'search', description: "Full-text search over the user's meetings, transcripts, talking points and notes." },
  { name: 'feature-flags', description: 'Feature flags as they apply to the caller.' },
  { name: 'preferences', description: "The user's preferences." },
  { name: 'vip', description: "The user's VIP people." },
];

export function registerDocs(app: OpenAPIHono<AppEnv>, deps: AppDeps) {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'User token from the identity provider (HS256 with IDENTITY_SECRET_KEY in development/test).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'serviceAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'SERVICE_AUTH_TOKEN of a calling service (the ML service).',
  });
  eventComponents(app.openAPIRegistry);

  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Meeting Intelligence core service',
      version: '1.0.0',
      contact: { name: 'Meeting Intelligence core team', url: 'https://meeting-intelligence.dev' },
      description:
        'REST API of the core service. Errors are RFC 9457 problem+json. Rate limits: deployed, every request passes per-client limits at the edge (per Authorization token; per client IP without one); over a limit the answer is 429 problem+json (type …/problems/too_many_requests) with Retry-After in seconds, and a client should wait that long before retrying. The WebSocket protocol (`GET /ws`) and the events it delivers are described under components.schemas (*Event, EntityChanged) and in docs/websocket.md.',
    },
    servers: [{ url: deps.config.PUBLIC_BASE_URL }],
    tags: TAGS,
  });

  app.get('/docs', (c) =>
    c.html(`<!doctype html><html><head><meta charset="utf-8"><title>Meeting Intelligence API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head><body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui' });</script></body></html>`),
  );
  app.get('/docs/assets/:file', async (c) => {
    const file = c.req.param('file');
    if (!ASSETS.has(file)) return c.notFound();
    const dir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
    const body = await readFile(path.join(dir, file));
    const type = file.endsWith('.css') ? 'text/css' : 'text/javascript';
    return c.body(body, 200, { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400' });
  });
}
