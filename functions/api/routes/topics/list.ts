import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listTopics } from '@mi/lib/repositories/synthesis';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { TopicSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/topics',
  operationId: 'listTopics',
  tags: ['topics'],
  summary: "A meeting's topics with their segment ids, in synthesis order",
  description:
    "Lists a meeting's topics in the order the synthesis gave them, each with the ids of its transcript segments.",
  auth: ['bearer', 'service'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(TopicSchema, 'TopicPage'), 'a page of topics'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListTopics(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, actorOf(c), id))) throw notFound('meeting');
    const result = await listTopics(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
