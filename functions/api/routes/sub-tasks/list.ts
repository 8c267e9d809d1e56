import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { listSubTasks } from '@mi/lib/repositories/sub-tasks';
import { getTask } from '@mi/lib/repositories/tasks';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { SubTaskSchema } from './schema';

const route = op({
  method: 'get',
  path: '/tasks/{id}/sub-tasks',
  operationId: 'listSubTasks',
  tags: ['sub-tasks'],
  summary: "List a task's legacy sub-tasks, oldest first",
  description: "Pages through a task's legacy sub-tasks, oldest first.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(SubTaskSchema, 'SubTaskPage'), 'a page of sub-tasks'),
    404: notFoundResponse('task'),
  },
});

export function registerListSubTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.deps;
    if (!(await getTask(db, actorOf(c), id))) throw notFound('task');
    const result = await listSubTasks(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
