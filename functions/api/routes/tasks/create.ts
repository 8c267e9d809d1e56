import type { OpenAPIHono } from '@hono/zod-openapi';
import { createTask } from '@mi/lib/domain/tasks';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreateTaskBody, TaskSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/tasks',
  operationId: 'createTask',
  tags: ['tasks'],
  summary: 'Create a task (source user)',
  description: "Referenced person, meeting and parent task must be the caller's (else 422). Broadcasts EntityChanged { entity: task, action: created }.",
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateTaskBody),
  responses: { 201: jsonResponse(TaskSchema, 'the created task') },
});

export function registerCreateTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const body = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const task = await createTask(tx, userId, body, 'user');
      emit(userId, changed('task', 'created', task.id, task.meeting_id));
      return task;
    });
  });
}
