import type { OpenAPIHono } from '@hono/zod-openapi';
import { setMyPerson } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op, Uuid, z } from '../../openapi';
import { UserSchema } from '../me';

const route = op({
  method: 'put',
  path: '/me/person',
  operationId: 'setMyPerson',
  tags: ['users'],
  summary: "Set (or clear with null) the caller's own person record",
  description:
    "Links the caller's user record to one of their people (the person who is the caller), or clears the link with null.",
  auth: ['bearer'],
  request: jsonBody(z.object({ person_id: Uuid.nullable() }).strict().openapi('SetMyPerson')),
  responses: { 200: jsonResponse(UserSchema, 'the user') },
});

export function registerSetMyPerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { person_id } = c.req.valid('json');
    return commit(c, 200, setMyPerson, { personId: person_id });
  });
}
