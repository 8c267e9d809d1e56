import type { OpenAPIHono } from '@hono/zod-openapi';
import { createPerson } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreatePersonBody, PersonSchema } from './schema';

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
    const body = c.req.valid('json');
    return commit(c, 201, createPerson, body);
  });
}
