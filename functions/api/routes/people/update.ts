import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getPerson, updatePerson } from '@mi/lib/domain/people';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { assertIfMatch, setEtag } from '../../etag';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, problemResponse, withEtag } from '../../openapi';
import { PatchPersonBody, PersonSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'patch',
  path: '/people/{id}',
  operationId: 'updatePerson',
  tags: ['people'],
  summary: "Partially update a person's user fields (voice fields are not writable)",
  description: 'Changes the user-editable fields of a person. The voice fields (voice_vector, voice_confidence, voice_model_status) are maintained by speaker-label assignments and are refused here (422). Honours If-Match (412).',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchPersonBody) },
  responses: {
    200: withEtag(jsonResponse(PersonSchema, 'the full person')),
    404: notFoundResponse('person'),
    409: problemResponse('display_name already used by another of your people'),
  },
});

export function registerUpdatePerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      await assertIfMatch(c, () => getPerson(tx, { userId }, id, { forUpdate: true }));
      const person = await updatePerson(tx, { userId }, id, patch);
      if (!person) throw notFound('person');
      emit(userId, changed('person', 'updated', id, null));
      setEtag(c, person);
      return person;
    });
  });
}
