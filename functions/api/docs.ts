// The OpenAPI 3.1 document (generated from the routes' zod schemas) and an interactive docs
// page (Scalar, served locally without telemetry: docs-page.ts).
import { readFile } from 'node:fs/promises';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { DomainError } from '@mi/lib/errors';
import { DOCS_ASSET, docsAssetPath, docsHtml } from './docs-page';
import type { AppDeps, AppEnv } from './env';
import { eventComponents } from './events-doc';

/** The operations' groups, in the order the docs show them; every operation names one of these. */
export const TAGS = [
  { name: 'users', description: 'The calling user and their own person record.' },
  { name: 'meetings', description: 'Meetings: the root of everything recorded, transcribed and summarised.' },
  {
    name: 'recording',
    description: 'Live takes recorded over the WebSocket: state, coverage, history, gap uploads, takes.',
  },
  { name: 'audio', description: 'Uploaded and recorded meeting audio: upload, signed links, streaming.' },
  {
    name: 'transcriptions',
    description: 'Transcriptions and their segments, written by the ML service; exports and corrections.',
  },
  { name: 'talking-points', description: 'Talking points the ML service finds during a meeting.' },
  { name: 'topics', description: 'Topics of a meeting, from its synthesis.' },
  { name: 'synthesis', description: "A meeting's synthesis (summary, key points, topics), written by the ML service." },
  {
    name: 'people',
    description: 'People the user meets, their voice models, speaker-label assignments and voice matches.',
  },
  { name: 'tasks', description: 'Tasks from meetings or made by hand, nested by parent_task_id.' },
  { name: 'sub-tasks', description: 'Legacy sub-tasks of a task.' },
  { name: 'notes', description: 'Notes about a meeting, person or task.' },
  { name: 'threads', description: 'AI chat threads and their messages.' },
  { name: 'tags', description: "The user's tags." },
  { name: 'search', description: "Full-text search over the user's meetings, transcripts, talking points and notes." },
  {
    name: 'webhooks',
    description:
      "Endpoints that receive the user's events server to server, signed per Standard Webhooks, retried, with a delivery log (docs/webhooks.md).",
  },
  {
    name: 'exports',
    description: 'The whole account as one ZIP archive, built off the request (docs/exports.md).',
  },
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

  app.get('/docs', (c) => c.html(docsHtml()));
  app.get('/docs/assets/:file', async (c) => {
    if (c.req.param('file') !== DOCS_ASSET) throw new DomainError('not_found', `no docs asset ${c.req.param('file')}`);
    const body = await readFile(docsAssetPath());
    return c.body(body, 200, {
      'Content-Type': 'text/javascript; charset=utf-8',
      'Cache-Control': 'public, max-age=86400',
    });
  });
}
