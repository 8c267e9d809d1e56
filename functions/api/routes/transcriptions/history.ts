import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTranscription, listStatusHistory } from '@mi/lib/repositories/transcriptions';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { StatusHistorySchema } from './schema';

const route = op({
  method: 'get',
  path: '/transcriptions/{id}/status-history',
  operationId: 'listTranscriptionStatusHistory',
  tags: ['transcriptions'],
  summary: "A transcription's status changes, oldest first",
  description: 'Lists every status change of a transcription, oldest first, with its message.',
  auth: ['bearer', 'service'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(StatusHistorySchema, 'TranscriptionStatusHistoryPage'), 'a page of status changes'),
    404: notFoundResponse('transcription'),
  },
});

export function registerTranscriptionHistory(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getTranscription(db, actorOf(c), id))) throw notFound('transcription');
    const result = await listStatusHistory(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
