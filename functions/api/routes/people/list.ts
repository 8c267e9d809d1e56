import type { OpenAPIHono } from '@hono/zod-openapi';
import { listPeople } from '@mi/lib/repositories/people';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, z } from '../../openapi';
import { PersonBriefSchema } from './schema';

const route = op({
  method: 'get',
  path: '/people',
  operationId: 'listPeople',
  tags: ['people'],
  summary: "List the caller's people by display_name (without voice_vector)",
  description:
    "Pages through the caller's people ordered by display_name. voice_vector is left out of lists (GET /people/{id} has it).",
  auth: ['bearer'],
  request: {
    query: z.object({
      ...PageQuery,
      q: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .openapi({ description: 'display_name or full_name contains (case-insensitive)' }),
    }),
  },
  responses: { 200: jsonResponse(page(PersonBriefSchema, 'PersonPage'), 'a page of people') },
});

export function registerListPeople(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listPeople(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
