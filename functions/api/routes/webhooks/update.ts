import type { OpenAPIHono } from '@hono/zod-openapi';
import { checkWebhookUrl } from '@mi/lib/webhooks/address';
import { updateWebhook } from '@mi/lib/use-cases/webhooks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { WebhookPatch, WebhookSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/webhooks/{id}',
  operationId: 'updateWebhook',
  tags: ['webhooks'],
  summary: 'Update a webhook',
  description:
    'Changes the URL (checked as on creation), event types, description or `enabled`. Enabling a disabled webhook ' +
    'resumes delivery where it stopped (events still in the outbox, kept EVENT_RETENTION_HOURS).',
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(WebhookPatch) },
  responses: { 200: jsonResponse(WebhookSchema, 'the webhook'), 404: notFoundResponse('webhook') },
});

export function registerUpdateWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const changes = c.req.valid('json');
    if (changes.url !== undefined) await checkWebhookUrl(changes.url, c.var.deps.config.APP_ENV);
    return commit(c, 200, updateWebhook, { id: c.req.valid('param').id, changes });
  });
}
