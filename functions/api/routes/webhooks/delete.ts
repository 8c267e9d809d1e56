import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteWebhook } from '@mi/lib/use-cases/webhooks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/webhooks/{id}',
  operationId: 'deleteWebhook',
  tags: ['webhooks'],
  summary: 'Delete a webhook',
  description: 'Deletes a webhook of the caller with its pending deliveries and its delivery log.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('webhook') },
});

export function registerDeleteWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => commit(c, 204, deleteWebhook, { id: c.req.valid('param').id }));
}
