import type { OpenAPIHono } from '@hono/zod-openapi';
import { deletePersonSummary } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/person-summaries/{id}',
  operationId: 'deletePersonSummary',
  tags: ['people'],
  summary: 'Delete a person summary',
  description:
    'Deletes a person summary of the caller (hard delete) and broadcasts EntityChanged person_summary deleted.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('person summary') },
});

export function registerDeleteSummary(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deletePersonSummary, { id });
  });
}
