import type { OpenAPIHono } from '@hono/zod-openapi';
import { getWebhook, listAttempts } from '@mi/lib/repositories/webhooks';
import { notFound } from '@mi/lib/errors';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page } from '../../openapi';
import { AttemptSchema, DeliveriesQuery } from './schema';

const route = op({
  method: 'get',
  path: '/webhooks/{id}/deliveries',
  operationId: 'listWebhookDeliveries',
  tags: ['webhooks'],
  summary: 'List delivery attempts of a webhook',
  description:
    'Every attempt of the last 7 days, newest first: the event, the attempt number, the answer or why there was none.',
  auth: ['bearer'],
  request: { params: IdParam, query: DeliveriesQuery },
  responses: {
    200: jsonResponse(page(AttemptSchema, 'WebhookAttemptPage'), 'a page of attempts'),
    404: notFoundResponse('webhook'),
  },
});

export function registerWebhookDeliveries(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { id } = c.req.valid('param');
    if (!(await getWebhook(c.var.deps.db, { userId: userIdOf(c) }, id))) throw notFound('webhook');
    return c.json(await listAttempts(c.var.deps.db, id, c.req.valid('query')), 200);
  });
}
