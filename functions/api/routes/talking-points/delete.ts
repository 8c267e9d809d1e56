import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { softDeleteTalkingPoint } from '@mi/lib/domain/talking-points';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/talking-points/{id}',
  operationId: 'deleteTalkingPoint',
  tags: ['talking-points'],
  summary: 'Soft-delete a talking point (sets deleted_at)',
  description: 'Soft-deletes a talking point of one of the caller\'s meetings (sets deleted_at) and broadcasts EntityChanged talking_point deleted.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('talking point') },
});

export function registerDeleteTalkingPoint(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const tp = await softDeleteTalkingPoint(tx, actorOf(c), id);
      if (!tp) throw notFound('talking point');
      emit(tp.user_id, changed('talking_point', 'deleted', id, tp.meeting_id));
    });
  });
}
