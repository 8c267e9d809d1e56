import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env';
import { jsonResponse, op, z } from '../openapi';

export const UserSchema = z
  .object({
    id: z.string().uuid(),
    username: z.string(),
    email: z.string(),
    identity_id: z.string(),
    person_id: z.string().uuid().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('User');

const getMe = op({
  method: 'get',
  path: '/me',
  operationId: 'getMe',
  tags: ['users'],
  summary: 'The calling user (created on first sight of their token)',
  auth: ['bearer'],
  responses: { 200: jsonResponse(UserSchema, 'the user') },
});

export function registerMe(app: OpenAPIHono<AppEnv>) {
  app.openapi(getMe, (c) => {
    const p = c.var.principal;
    if (p.kind !== 'user') throw new Error('unreachable: bearer only');
    return c.json(p.user, 200);
  });
}
