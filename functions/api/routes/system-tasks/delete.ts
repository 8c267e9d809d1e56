import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteSystemTasks } from '@mi/lib/use-cases/tasks';
import { fencedBy } from '@mi/lib/use-cases/batch-claims';
import { commit } from '../../commit';
import { mlClaimOf } from '../../ml-claim';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { DeleteSystemTasksQuery } from './schema';

const route = op({
  method: 'delete',
  path: '/meetings/{id}/tasks',
  operationId: 'deleteSystemTasks',
  tags: ['tasks'],
  summary: 'Soft-delete all system-generated tasks of the meeting (before re-extraction); user tasks stay',
  description:
    'Broadcasts EntityChanged { entity: task, action: deleted } per task. Any source other than system is 422.',
  auth: ['service'],
  mlClaim: true,
  request: { params: IdParam, query: DeleteSystemTasksQuery },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('meeting') },
});

export function registerDeleteSystemTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, fencedBy(mlClaimOf(c), { meetingId: id }, deleteSystemTasks), { meetingId: id });
  });
}
