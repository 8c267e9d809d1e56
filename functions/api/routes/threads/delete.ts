import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteThread } from '@mi/lib/use-cases/threads';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/threads/{id}',
  operationId: 'deleteThread',
  tags: ['threads'],
  summary: 'Soft-delete an AI chat thread (its messages are hidden with it)',
  description: 'Broadcasts EntityChanged { entity: ai_thread, action: deleted }.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('thread') },
});

export function registerDeleteThread(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteThread, { id });
  });
}
