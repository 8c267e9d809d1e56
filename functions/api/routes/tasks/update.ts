import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTask, updateTask } from '@mi/lib/domain/tasks';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { assertIfMatch, setEtag } from '../../etag';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { PatchTaskBody, TaskSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'patch',
  path: '/tasks/{id}',
  operationId: 'updateTask',
  tags: ['tasks'],
  summary: 'Partially update a task',
  description:
    "Referenced ids must be the caller's (else 422); a parent that is the task itself or one of its descendants is 422. Broadcasts EntityChanged { entity: task, action: updated }.",
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchTaskBody) },
  responses: { 200: withEtag(jsonResponse(TaskSchema, 'the full task')), 404: notFoundResponse('task') },
});

export function registerUpdateTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      await assertIfMatch(c, () => getTask(tx, actorOf(c), id, { forUpdate: true }));
      const task = await updateTask(tx, actorOf(c), id, patch);
      if (!task) throw notFound('task');
      emit(task.user_id, changed('task', 'updated', task.id, task.meeting_id));
      setEtag(c, task);
      return task;
    });
  });
}
