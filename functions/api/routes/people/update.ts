import type { OpenAPIHono } from '@hono/zod-openapi';
import { updatePerson } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, problemResponse, withEtag } from '../../openapi';
import { PatchPersonBody, PersonSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/people/{id}',
  operationId: 'updatePerson',
  tags: ['people'],
  summary: "Partially update a person's user fields (voice fields are not writable)",
  description:
    'Changes the user-editable fields of a person. The voice fields (voice_vector, voice_confidence, voice_model_status) are maintained by speaker-label assignments and are refused here (422). Honours If-Match (412).',
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
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updatePerson, { id, patch, precondition: ifMatch(c) }, { etag: true });
  });
}
