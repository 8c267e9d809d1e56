import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteMeeting } from '@mi/lib/use-cases/meetings';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/meetings/{id}',
  operationId: 'deleteMeeting',
  tags: ['meetings'],
  summary: 'Soft-delete a meeting (sets deleted_at)',
  description:
    'Its tasks live on without it: their meeting_id is cleared in the same transaction. Broadcasts EntityChanged { entity: meeting, action: deleted } and { entity: task, action: updated } for each detached task.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('meeting') },
});

export function registerDeleteMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteMeeting, { id, precondition: ifMatch(c) });
  });
}
