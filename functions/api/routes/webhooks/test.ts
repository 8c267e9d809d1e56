import type { OpenAPIHono } from '@hono/zod-openapi';
import { testWebhook } from '@mi/lib/use-cases/webhooks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, problemResponse } from '../../openapi';
import { TestSentSchema } from './schema';

const route = op({
  method: 'post',
  path: '/webhooks/{id}/test',
  operationId: 'testWebhook',
  tags: ['webhooks'],
  summary: 'Send a test event',
  description:
    'Queues `{"type":"WebhookTest","event_id","occurred_at","webhook_id"}` ahead of the webhook\'s other deliveries; ' +
    'it is sent at once, signed and retried like any event, and its attempts appear in the deliveries.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: {
    202: jsonResponse(TestSentSchema, 'queued; the event_id is the webhook-id the receiver gets'),
    404: notFoundResponse('webhook'),
    409: problemResponse('invalid_state: the webhook is disabled'),
  },
});

export function registerTestWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => commit(c, 202, testWebhook, { id: c.req.valid('param').id }));
}
