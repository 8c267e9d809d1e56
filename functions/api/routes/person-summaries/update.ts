import type { OpenAPIHono } from '@hono/zod-openapi';
import { updatePersonSummary } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { PatchSummaryBody, PersonSummarySchema } from './schema';

const route = op({
  method: 'patch',
  path: '/person-summaries/{id}',
  operationId: 'updatePersonSummary',
  tags: ['people'],
  summary: 'Partially update a person summary',
  description: 'Changes the text or fields of a person summary of the caller.',
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchSummaryBody) },
  responses: { 200: jsonResponse(PersonSummarySchema, 'the full summary'), 404: notFoundResponse('person summary') },
});

export function registerUpdateSummary(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updatePersonSummary, { id, patch });
  });
}
