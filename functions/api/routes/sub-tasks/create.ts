import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { createSubTask } from '@mi/lib/domain/sub-tasks';
import { getTask } from '@mi/lib/domain/tasks';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateSubTaskBody, SubTaskSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

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
    return commit(c, 201, async (tx, emit) => {
      // Locked so the task cannot be deleted between the check and the insert.
      const task = await getTask(tx, actorOf(c), id, { forUpdate: true });
      if (!task) throw notFound('task');
      const sub = await createSubTask(tx, task.user_id, task.id, body);
      emit(task.user_id, changed('sub_task', 'created', sub.id, task.meeting_id));
      return sub;
    });
  });
}
