import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateSegment } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag, z } from '../../openapi';
import { SegmentSchema } from './schema';

const PatchSegmentBody = z
  .object({ text: z.string().max(100_000).optional(), is_highlighted: z.boolean().optional() })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchTranscriptSegment');

const route = op({
  method: 'patch',
  path: '/transcript-segments/{id}',
  operationId: 'updateTranscriptSegment',
  tags: ['transcriptions'],
  summary: "Correct a segment's text or highlight it",
  description:
    'For the meeting owner. Broadcasts EntityChanged { entity: transcript_segment, action: updated }. ' +
    'A later batch replace of the transcription (PUT /transcriptions/{id}/segments) keeps no user edits.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchSegmentBody) },
  responses: { 200: withEtag(jsonResponse(SegmentSchema, 'the full segment')), 404: notFoundResponse('segment') },
});

export function registerUpdateSegment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updateSegment, { id, patch, precondition: ifMatch(c) }, { etag: true });
  });
}
