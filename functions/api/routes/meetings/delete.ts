import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { softDeleteMeeting } from '@mi/lib/domain/meetings';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/meetings/{id}',
  operationId: 'deleteMeeting',
  tags: ['meetings'],
  summary: 'Soft-delete a meeting (sets deleted_at)',
  description:
    'Its tasks live on without it: their meeting_id is cleared in the same transaction. Broadcasts EntityChanged { entity: meeting, action: deleted } and { entity: task, action: updated } for each detached task.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('meeting') },
});

export function registerDeleteMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const deleted = await softDeleteMeeting(tx, actorOf(c), id);
      if (!deleted) throw notFound('meeting');
      const owner = deleted.meeting.user_id;
      emit(owner, changed('meeting', 'deleted', id, id));
      for (const taskId of deleted.detachedTaskIds) emit(owner, changed('task', 'updated', taskId, null));
    });
  });
}
