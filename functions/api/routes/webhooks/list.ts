import type { OpenAPIHono } from '@hono/zod-openapi';
import { listWebhooks } from '@mi/lib/repositories/webhooks';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, z } from '../../openapi';
import { WebhookSchema } from './schema';

const route = op({
  method: 'get',
  path: '/webhooks',
  operationId: 'listWebhooks',
  tags: ['webhooks'],
  summary: "List the caller's webhooks",
  description: "Pages through the caller's webhooks, oldest first (secrets are never listed).",
  auth: ['bearer'],
  request: { query: z.object(PageQuery) },
  responses: { 200: jsonResponse(page(WebhookSchema, 'WebhookPage'), 'a page of webhooks') },
});

export function registerListWebhooks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await listWebhooks(c.var.deps.db, userIdOf(c), c.req.valid('query')), 200));
}
