import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { updateSubTask } from '@mi/lib/domain/sub-tasks';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { PatchSubTaskBody, SubTaskSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'patch',
  path: '/sub-tasks/{id}',
  operationId: 'updateSubTask',
  tags: ['sub-tasks'],
  summary: 'Partially update a legacy sub-task',
  description: 'Broadcasts EntityChanged { entity: sub_task, action: updated }.',
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchSubTaskBody) },
  responses: { 200: jsonResponse(SubTaskSchema, 'the full sub-task'), 404: notFoundResponse('sub-task') },
});

export function registerUpdateSubTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      const found = await updateSubTask(tx, actorOf(c), id, patch);
      if (!found) throw notFound('sub-task');
      emit(found.user_id, changed('sub_task', 'updated', id, found.meeting_id));
      return found.sub_task;
    });
  });
}
