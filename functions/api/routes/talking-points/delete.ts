import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteTalkingPoint } from '@mi/lib/use-cases/talking-points';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/talking-points/{id}',
  operationId: 'deleteTalkingPoint',
  tags: ['talking-points'],
  summary: 'Soft-delete a talking point (sets deleted_at)',
  description:
    "Soft-deletes a talking point of one of the caller's meetings (sets deleted_at) and broadcasts EntityChanged talking_point deleted.",
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('talking point') },
});

export function registerDeleteTalkingPoint(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteTalkingPoint, { id });
  });
}
