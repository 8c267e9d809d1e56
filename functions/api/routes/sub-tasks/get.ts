import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getSubTask } from '@mi/lib/repositories/sub-tasks';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { SubTaskSchema } from './schema';

const route = op({
  method: 'get',
  path: '/sub-tasks/{id}',
  operationId: 'getSubTask',
  tags: ['sub-tasks'],
  summary: 'Get a legacy sub-task',
  description: "Returns one legacy sub-task of one of the caller's tasks.",
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(SubTaskSchema, 'the sub-task'), 404: notFoundResponse('sub-task') },
});

export function registerGetSubTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const found = await getSubTask(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!found) throw notFound('sub-task');
    return c.json(found.sub_task, 200);
  });
}
