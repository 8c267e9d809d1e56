import type { OpenAPIHono } from '@hono/zod-openapi';
import { mergePerson } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { MergePersonBody, PersonSchema } from './schema';

const route = op({
  method: 'post',
  path: '/people/{id}/merge',
  operationId: 'mergePerson',
  tags: ['people'],
  summary: 'Merge another person into this one',
  description: [
    'Two of your people are one. In one transaction everything of the person named in the body moves to {id}:',
    'speaker-label assignments and the transcript segments attributed to them, voice samples (the voice model',
    'is recomputed from all of them), task and sub-task assignments, notes, AI threads and summaries about them,',
    'and meeting attendance; your own person becomes {id} if it was the other. Empty contact fields of {id} take',
    "the other's values; {id}'s own values and display_name stay. The other person is then deleted.",
    'Broadcasts EntityChanged { entity: person, action: updated } for {id} and { action: deleted } for the other',
    '(and { entity: user } when your own person moved). 422 when person_id is {id} itself; 404 when either is not',
    'one of your people.',
  ].join(' '),
  auth: ['bearer'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(MergePersonBody) },
  responses: { 200: withEtag(jsonResponse(PersonSchema, 'the merged person')), 404: notFoundResponse('person') },
});

export function registerMergePerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { person_id } = c.req.valid('json');
    return commit(c, 200, mergePerson, { id, otherId: person_id }, { etag: true });
  });
}
