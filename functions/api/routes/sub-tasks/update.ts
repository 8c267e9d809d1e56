import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateSubTask } from '@mi/lib/use-cases/tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { PatchSubTaskBody, SubTaskSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/sub-tasks/{id}',
  operationId: 'updateSubTask',
  tags: ['sub-tasks'],
  summary: 'Partially update a legacy sub-task',
  description: 'Broadcasts EntityChanged { entity: sub_task, action: updated }.',
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchSubTaskBody) },
  responses: { 200: jsonResponse(SubTaskSchema, 'the full sub-task'), 404: notFoundResponse('sub-task') },
});

export function registerUpdateSubTask(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updateSubTask, { id, patch });
  });
}
