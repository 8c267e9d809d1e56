import type { OpenAPIHono } from '@hono/zod-openapi';
import { listTags } from '@mi/lib/repositories/tags';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, z } from '../../openapi';
import { TagSchema } from './schema';

const route = op({
  method: 'get',
  path: '/tags',
  operationId: 'listTags',
  tags: ['tags'],
  summary: "List the caller's tags by name",
  description: "Pages through the caller's tags ordered by name.",
  auth: ['bearer'],
  request: { query: z.object(PageQuery) },
  responses: { 200: jsonResponse(page(TagSchema, 'TagPage'), 'a page of tags') },
});

export function registerListTags(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listTags(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
