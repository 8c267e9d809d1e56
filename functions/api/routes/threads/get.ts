import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getThread } from '@mi/lib/repositories/threads';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { AiThreadSchema } from './schema';

const route = op({
  method: 'get',
  path: '/threads/{id}',
  operationId: 'getThread',
  tags: ['threads'],
  summary: 'Get an AI chat thread',
  description: 'Returns one AI chat thread of the caller.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(AiThreadSchema, 'the thread'), 404: notFoundResponse('thread') },
});

export function registerGetThread(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const thread = await getThread(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!thread) throw notFound('thread');
    return c.json(thread, 200);
  });
}
