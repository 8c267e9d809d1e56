import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteSubTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

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
    return commit(c, 204, deleteSubTask, { id });
  });
}
