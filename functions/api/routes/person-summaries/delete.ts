import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { deleteSummary } from '@mi/lib/domain/person-summaries';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/person-summaries/{id}',
  operationId: 'deletePersonSummary',
  tags: ['people'],
  summary: 'Delete a person summary',
  description: 'Deletes a person summary of the caller (hard delete) and broadcasts EntityChanged person_summary deleted.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('person summary') },
});

export function registerDeleteSummary(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const deleted = await deleteSummary(tx, { userId }, id);
      if (!deleted) throw notFound('person summary');
      emit(deleted.owner_id, changed('person_summary', 'deleted', id, null));
    });
  });
}
