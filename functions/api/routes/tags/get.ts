import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTag } from '@mi/lib/repositories/tags';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { TagSchema } from './schema';

const route = op({
  method: 'get',
  path: '/tags/{id}',
  operationId: 'getTag',
  tags: ['tags'],
  summary: 'Get a tag',
  description: 'Returns one tag of the caller.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(TagSchema, 'the tag'), 404: notFoundResponse('tag') },
});

export function registerGetTag(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const tag = await getTag(c.var.deps.db, { userId: userIdOf(c) }, c.req.valid('param').id);
    if (!tag) throw notFound('tag');
    return c.json(tag, 200);
  });
}
