import type { OpenAPIHono } from '@hono/zod-openapi';
import { deletePerson } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/people/{id}',
  operationId: 'deletePerson',
  tags: ['people'],
  summary: 'Delete a person',
  description:
    'Hard delete. Transcript segments and tasks keep existing without the person, its summaries, speaker-label assignments, voice samples and attendances are deleted, and a user whose own person it was gets person_id null.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('person') },
});

export function registerDeletePerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deletePerson, { id, precondition: ifMatch(c) });
  });
}
