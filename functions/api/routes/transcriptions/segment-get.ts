import type { OpenAPIHono } from '@hono/zod-openapi';
import { getSegment } from '@mi/lib/repositories/transcript-segments';
import { notFound } from '@mi/lib/errors';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { setEtag } from '../../etag';
import { IdParam, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { SegmentSchema } from './schema';

const route = op({
  method: 'get',
  path: '/transcript-segments/{id}',
  operationId: 'getTranscriptSegment',
  tags: ['transcriptions'],
  summary: 'Get a transcript segment',
  description:
    "For the meeting owner, with an ETag for a later conditional PATCH. Other users' segments and those of a deleted meeting answer 404.",
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: withEtag(jsonResponse(SegmentSchema, 'the segment')), 404: notFoundResponse('segment') },
});

export function registerGetSegment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const segment = await getSegment(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!segment) throw notFound('segment');
    setEtag(c, segment);
    return c.json(segment, 200);
  });
}
