import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { updateSummary } from '@mi/lib/domain/person-summaries';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { PatchSummaryBody, PersonSummarySchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

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
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      const updated = await updateSummary(tx, { userId }, id, patch);
      if (!updated) throw notFound('person summary');
      const { owner_id, ...summary } = updated;
      emit(owner_id, changed('person_summary', 'updated', id, null));
      return summary;
    });
  });
}
