import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getPerson } from '@mi/lib/repositories/people';
import { listSummaries } from '@mi/lib/repositories/person-summaries';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { PersonSummarySchema } from './schema';

const route = op({
  method: 'get',
  path: '/people/{id}/summaries',
  operationId: 'listPersonSummaries',
  tags: ['people'],
  summary: "A person's summaries, newest first",
  description: "Pages through the summaries of one of the caller's people, newest first.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(PersonSummarySchema, 'PersonSummaryPage'), 'a page of summaries'),
    404: notFoundResponse('person'),
  },
});

export function registerListSummaries(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getPerson(db, { userId: userIdOf(c) }, id))) throw notFound('person');
    const result = await listSummaries(db, id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
