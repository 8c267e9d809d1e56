import type { OpenAPIHono } from '@hono/zod-openapi';
import { unprocessable } from '@mi/lib/errors';
import { setOwnPerson } from '@mi/lib/domain/people';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op, Uuid, z } from '../../openapi';
import { UserSchema } from '../me';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'put',
  path: '/me/person',
  operationId: 'setMyPerson',
  tags: ['users'],
  summary: "Set (or clear with null) the caller's own person record",
  description: 'Links the caller\'s user record to one of their people (the person who is the caller), or clears the link with null.',
  auth: ['bearer'],
  request: jsonBody(z.object({ person_id: Uuid.nullable() }).strict().openapi('SetMyPerson')),
  responses: { 200: jsonResponse(UserSchema, 'the user') },
});

export function registerSetMyPerson(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const { person_id } = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      const user = await setOwnPerson(tx, userId, person_id);
      if (!user) throw unprocessable('person_id does not exist', [{ path: 'person_id', message: 'person does not exist' }]);
      emit(userId, changed('user', 'updated', userId, null));
      return user;
    });
  });
}
