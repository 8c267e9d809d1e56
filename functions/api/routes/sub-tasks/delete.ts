import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { deleteSubTask } from '@mi/lib/domain/sub-tasks';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/sub-tasks/{id}',
  operationId: 'deleteSubTask',
  tags: ['sub-tasks'],
  summary: 'Delete a legacy sub-task (hard delete; sub-tasks have no deleted_at)',
  description: 'Broadcasts EntityChanged { entity: sub_task, action: deleted }.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('sub-task') },
});

export function registerDeleteSubTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const found = await deleteSubTask(tx, actorOf(c), id);
      if (!found) throw notFound('sub-task');
      emit(found.user_id, changed('sub_task', 'deleted', id, found.meeting_id));
    });
  });
}
