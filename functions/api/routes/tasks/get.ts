import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTask } from '@mi/lib/repositories/tasks';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { setEtag } from '../../etag';
import { IdParam, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { TaskSchema } from './schema';

const route = op({
  method: 'get',
  path: '/tasks/{id}',
  operationId: 'getTask',
  tags: ['tasks'],
  summary: 'Get a task',
  description:
    "Returns one task of the caller with an ETag for a later conditional PATCH; soft-deleted and other users' tasks answer 404.",
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: withEtag(jsonResponse(TaskSchema, 'the task')), 404: notFoundResponse('task') },
});

export function registerGetTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const task = await getTask(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!task) throw notFound('task');
    setEtag(c, task);
    return c.json(task, 200);
  });
}
