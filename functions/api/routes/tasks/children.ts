import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTask, listTasks } from '@mi/lib/repositories/tasks';
import { actorOf, userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, PageQuery, z } from '../../openapi';
import { TaskPage } from './list';

const route = op({
  method: 'get',
  path: '/tasks/{id}/children',
  operationId: 'listTaskChildren',
  tags: ['tasks'],
  summary: 'List the live tasks whose parent_task_id is this task, newest first',
  description: 'Pages through the tasks whose parent_task_id is this task, newest first (soft-deleted ones excluded).',
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: { 200: jsonResponse(TaskPage, 'a page of child tasks'), 404: notFoundResponse('task') },
});

export function registerListTaskChildren(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.deps;
    if (!(await getTask(db, actorOf(c), id))) throw notFound('task');
    const result = await listTasks(db, userIdOf(c), { ...c.req.valid('query'), parent_task_id: id });
    return c.json(result, 200);
  });
}
