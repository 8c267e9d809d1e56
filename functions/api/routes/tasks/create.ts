import type { OpenAPIHono } from '@hono/zod-openapi';
import { createTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreateTaskBody, TaskSchema } from './schema';

const route = op({
  method: 'post',
  path: '/tasks',
  operationId: 'createTask',
  tags: ['tasks'],
  summary: 'Create a task (source user)',
  description:
    "Referenced person, meeting and parent task must be the caller's (else 422). Broadcasts EntityChanged { entity: task, action: created }.",
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateTaskBody),
  responses: { 201: jsonResponse(TaskSchema, 'the created task') },
});

export function registerCreateTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const body = c.req.valid('json');
    return commit(c, 201, createTask, body);
  });
}
