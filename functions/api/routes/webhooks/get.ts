import type { OpenAPIHono } from '@hono/zod-openapi';
import { getWebhook } from '@mi/lib/repositories/webhooks';
import { notFound } from '@mi/lib/errors';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { WebhookSchema } from './schema';

const route = op({
  method: 'get',
  path: '/webhooks/{id}',
  operationId: 'getWebhook',
  tags: ['webhooks'],
  summary: 'Get a webhook',
  description: 'Returns one webhook of the caller (without its secret); `enabled` false once it failed for 5 days.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(WebhookSchema, 'the webhook'), 404: notFoundResponse('webhook') },
});

export function registerGetWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const hook = await getWebhook(c.var.deps.db, { userId: userIdOf(c) }, c.req.valid('param').id);
    if (!hook) throw notFound('webhook');
    return c.json(hook, 200);
  });
}
