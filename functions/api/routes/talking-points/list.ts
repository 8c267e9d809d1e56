import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listTalkingPoints } from '@mi/lib/repositories/talking-points';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { TalkingPointSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/talking-points',
  operationId: 'listTalkingPoints',
  tags: ['talking-points'],
  summary: "A meeting's talking points, oldest first",
  description: "Pages through a meeting's talking points, oldest first (soft-deleted ones excluded).",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(TalkingPointSchema, 'TalkingPointPage'), 'a page of talking points'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListTalkingPoints(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, actorOf(c), id))) throw notFound('meeting');
    const result = await listTalkingPoints(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
