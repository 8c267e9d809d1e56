import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listTakes } from '@mi/lib/repositories/takes';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { TakeSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/recording/takes',
  operationId: 'listRecordingTakes',
  tags: ['recording'],
  summary: "Every take of the meeting's live recording, oldest first",
  description:
    'One item per audio_version. A finalized take with stored frames is playable through GET /meetings/{id}/audio-url?audio_version=N; ' +
    'a take that is not finalized yet answers 422 there.',
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(TakeSchema, 'RecordingTakePage'), 'a page of takes'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListRecordingTakes(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId: userIdOf(c) }, id))) throw notFound('meeting');
    const result = await listTakes(db, id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
