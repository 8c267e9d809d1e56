import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getPerson } from '@mi/lib/repositories/people';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { setEtag } from '../../etag';
import { IdParam, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { PersonSchema } from './schema';

const route = op({
  method: 'get',
  path: '/people/{id}',
  operationId: 'getPerson',
  tags: ['people'],
  summary: 'Get a person, with voice_vector',
  description:
    'Returns one person of the caller (any person for the service), voice_vector included, with an ETag for a later conditional PATCH.',
  auth: ['bearer', 'service'],
  request: { params: IdParam },
  responses: { 200: withEtag(jsonResponse(PersonSchema, 'the person')), 404: notFoundResponse('person') },
});

export function registerGetPerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const person = await getPerson(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!person) throw notFound('person');
    setEtag(c, person);
    return c.json(person, 200);
  });
}
