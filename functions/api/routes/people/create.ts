import type { OpenAPIHono } from '@hono/zod-openapi';
import { createPerson } from '@mi/lib/domain/people';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreatePersonBody, PersonSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/people',
  operationId: 'createPerson',
  tags: ['people'],
  summary: 'Create a person (contact or meeting participant)',
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreatePersonBody),
  description: '409 when display_name is already used by another of your people.',
  responses: { 201: jsonResponse(PersonSchema, 'the created person') },
});

export function registerCreatePerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const body = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const person = await createPerson(tx, userId, body);
      emit(userId, changed('person', 'created', person.id, null));
      return person;
    });
  });
}
