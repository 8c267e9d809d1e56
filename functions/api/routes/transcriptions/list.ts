import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listTranscriptions } from '@mi/lib/repositories/transcriptions';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { TranscriptionSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/transcriptions',
  operationId: 'listMeetingTranscriptions',
  tags: ['transcriptions'],
  summary: "A meeting's transcriptions, oldest first",
  description: "Pages through a meeting's transcriptions (one per take or upload), oldest first.",
  auth: ['bearer', 'service'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(TranscriptionSchema, 'TranscriptionPage'), 'a page of transcriptions'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListTranscriptions(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, actorOf(c), id))) throw notFound('meeting');
    const result = await listTranscriptions(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
