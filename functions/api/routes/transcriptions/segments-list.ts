import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { listSegments } from '@mi/lib/repositories/transcript-segments';
import { getTranscription } from '@mi/lib/repositories/transcriptions';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { SegmentSchema } from './schema';

const route = op({
  method: 'get',
  path: '/transcriptions/{id}/segments',
  operationId: 'listTranscriptSegments',
  tags: ['transcriptions'],
  summary: 'Segments of a transcription by start_ms',
  description:
    "Pages through a transcription's stored segments ordered by start_ms (interim segments are never stored).",
  auth: ['bearer', 'service'],
  request: {
    params: IdParam,
    query: z.object({
      ...PageQuery,
      order: z.enum(['asc', 'desc']).default('asc').openapi({ description: 'by start_ms (then id)' }),
    }),
  },
  responses: {
    200: jsonResponse(page(SegmentSchema, 'TranscriptSegmentPage'), 'a page of segments'),
    404: notFoundResponse('transcription'),
  },
});

export function registerListSegments(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getTranscription(db, actorOf(c), id))) throw notFound('transcription');
    const result = await listSegments(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
