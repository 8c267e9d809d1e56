import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteTag } from '@mi/lib/use-cases/tags';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/tags/{id}',
  operationId: 'deleteTag',
  tags: ['tags'],
  summary: 'Delete a tag',
  description: 'Deletes a tag of the caller and broadcasts EntityChanged tag deleted.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('tag') },
});

export function registerDeleteTag(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteTag, { id });
  });
}
