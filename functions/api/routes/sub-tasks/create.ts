import type { OpenAPIHono } from '@hono/zod-openapi';
import { createSubTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateSubTaskBody, SubTaskSchema } from './schema';

const route = op({
  method: 'post',
  path: '/tasks/{id}/sub-tasks',
  operationId: 'createSubTask',
  tags: ['sub-tasks'],
  summary: 'Add a legacy sub-task to a task',
  description: 'Broadcasts EntityChanged { entity: sub_task, action: created, meeting_id: the task meeting }.',
  auth: ['bearer'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(CreateSubTaskBody) },
  responses: { 201: jsonResponse(SubTaskSchema, 'the created sub-task'), 404: notFoundResponse('task') },
});

export function registerCreateSubTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    return commit(c, 201, createSubTask, { taskId: id, body });
  });
}
