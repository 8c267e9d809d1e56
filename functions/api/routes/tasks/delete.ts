import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/tasks/{id}',
  operationId: 'deleteTask',
  tags: ['tasks'],
  summary: 'Soft-delete a task and its child tasks (sets deleted_at)',
  description:
    'Broadcasts EntityChanged { entity: task, action: deleted } for the task and each child task deleted with it.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('task') },
});

export function registerDeleteTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteTask, { id, precondition: ifMatch(c) });
  });
}
