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
      description:
        'REST API of the core service. Errors are RFC 9457 problem+json. The WebSocket protocol (`GET /ws`) and the events it delivers are described under components.schemas (*Event, EntityChanged) and in docs/websocket.md.',
    },
    servers: [{ url: deps.config.PUBLIC_BASE_URL }],
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
