import type { OpenAPIHono } from '@hono/zod-openapi';
import { listThreads } from '@mi/lib/repositories/threads';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, Uuid, z } from '../../openapi';
import { SubjectType } from '../notes/schema';
import { AiThreadSchema } from './schema';

const route = op({
  method: 'get',
  path: '/threads',
  operationId: 'listThreads',
  tags: ['threads'],
  summary: "List the caller's AI chat threads, newest first",
  description: "Pages through the caller's AI chat threads, newest first (soft-deleted ones excluded).",
  auth: ['bearer'],
  request: { query: z.object({ ...PageQuery, context_type: SubjectType.optional(), context_id: Uuid.optional() }) },
  responses: { 200: jsonResponse(page(AiThreadSchema, 'AiThreadPage'), 'a page of threads') },
});

export function registerListThreads(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listThreads(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
