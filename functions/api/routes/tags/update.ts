import type { OpenAPIHono } from '@hono/zod-openapi';
import { renameTag } from '@mi/lib/use-cases/tags';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { TagBody, TagSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/tags/{id}',
  operationId: 'updateTag',
  tags: ['tags'],
  summary: 'Rename a tag',
  description: 'Renames a tag of the caller; a name the caller already has answers 409.',
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(TagBody) },
  responses: { 200: jsonResponse(TagSchema, 'the tag'), 404: notFoundResponse('tag') },
});

export function registerUpdateTag(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { name } = c.req.valid('json');
    return commit(c, 200, renameTag, { id, name });
  });
}
