import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { softDeleteMeeting } from '@mi/lib/domain/meetings';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/meetings/{id}',
  operationId: 'deleteMeeting',
  tags: ['meetings'],
  summary: 'Soft-delete a meeting (sets deleted_at)',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('meeting') },
});

export function registerDeleteMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const meeting = await softDeleteMeeting(tx, actorOf(c), id);
      if (!meeting) throw notFound('meeting');
      await emit(meeting.user_id, { type: 'EntityChanged', entity: 'meeting', action: 'deleted', id, meeting_id: id });
    }) as never;
  });
}
