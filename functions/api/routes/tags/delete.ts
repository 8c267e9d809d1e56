import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { deleteTag } from '@mi/lib/domain/tags';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

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
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      if (!(await deleteTag(tx, { userId }, id))) throw notFound('tag');
      emit(userId, changed('tag', 'deleted', id, null));
    });
  });
}
