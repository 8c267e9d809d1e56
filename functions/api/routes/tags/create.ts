import type { OpenAPIHono } from '@hono/zod-openapi';
import { createTag } from '@mi/lib/use-cases/tags';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { TagBody, TagSchema } from './schema';

const route = op({
  method: 'post',
  path: '/tags',
  operationId: 'createTag',
  tags: ['tags'],
  summary: 'Create a tag',
  description: 'Creates a tag of the caller; names are unique per user (409 otherwise). Requires an Idempotency-Key.',
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(TagBody),
  responses: { 201: jsonResponse(TagSchema, 'the created tag') },
});

export function registerCreateTag(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { name } = c.req.valid('json');
    return commit(c, 201, createTag, { name });
  });
}
