import type { OpenAPIHono } from '@hono/zod-openapi';
import { listTasks } from '@mi/lib/repositories/tasks';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, Uuid, z } from '../../openapi';
import { TaskSchema, TaskSource, TaskStatus } from './schema';

export const TaskPage = page(TaskSchema, 'TaskPage');

const route = op({
  method: 'get',
  path: '/tasks',
  operationId: 'listTasks',
  tags: ['tasks'],
  summary: "List the caller's tasks, newest first (soft-deleted tasks are not listed)",
  description:
    "Pages through the caller's tasks, newest first, filtered by meeting, status, assignee, source or parent task.",
  auth: ['bearer'],
  request: {
    query: z.object({
      ...PageQuery,
      meeting_id: Uuid.optional(),
      status: TaskStatus.optional(),
      assigned_to: Uuid.optional().openapi({ description: 'person id' }),
      source: TaskSource.optional(),
      parent_task_id: Uuid.optional().openapi({ description: 'only the children of this task' }),
    }),
  },
  responses: { 200: jsonResponse(TaskPage, 'a page of tasks') },
});

export function registerListTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listTasks(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
