import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { PatchTaskBody, TaskSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/tasks/{id}',
  operationId: 'updateTask',
  tags: ['tasks'],
  summary: 'Partially update a task',
  description:
    "Referenced ids must be the caller's (else 422); a parent that is the task itself or one of its descendants is 422. Broadcasts EntityChanged { entity: task, action: updated }.",
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchTaskBody) },
  responses: { 200: withEtag(jsonResponse(TaskSchema, 'the full task')), 404: notFoundResponse('task') },
});

export function registerUpdateTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updateTask, { id, patch, precondition: ifMatch(c) }, { etag: true });
  });
}
