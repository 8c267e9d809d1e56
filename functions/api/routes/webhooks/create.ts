import type { OpenAPIHono } from '@hono/zod-openapi';
import { checkWebhookUrl } from '@mi/lib/webhooks/address';
import { createWebhook } from '@mi/lib/use-cases/webhooks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreatedWebhookSchema, WebhookBody } from './schema';

const route = op({
  method: 'post',
  path: '/webhooks',
  operationId: 'createWebhook',
  tags: ['webhooks'],
  summary: 'Create a webhook',
  description:
    "Creates an endpoint that receives the caller's events from now on, signed per the Standard Webhooks specification. " +
    'The secret is returned here only. A URL that is not https (outside development and test) or whose host resolves ' +
    'to a private, loopback, link-local or metadata address is 422. At most 20 per user. Requires an Idempotency-Key.',
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(WebhookBody),
  responses: { 201: jsonResponse(CreatedWebhookSchema, 'the created webhook, with its secret') },
});

export function registerCreateWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    await checkWebhookUrl(body.url, c.var.deps.config.APP_ENV);
    return commit(c, 201, createWebhook, body);
  });
}
