import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateSegment } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag, z } from '../../openapi';
import { SegmentSchema } from './schema';

const PatchSegmentBody = z
  .object({
    text: z.string().max(100_000).optional(),
    is_highlighted: z.boolean().optional(),
    speaker_label: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ example: 'SPEAKER_1', description: "another speaker label of the segment's meeting" }),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchTranscriptSegment');

const route = op({
  method: 'patch',
  path: '/transcript-segments/{id}',
  operationId: 'updateTranscriptSegment',
  tags: ['transcriptions'],
  summary: "Correct a segment's text or speaker, or highlight it",
  description:
    'For the meeting owner. `speaker_label` moves the segment to that label of its meeting: the segment takes ' +
    'the person assigned to the label (none when unassigned), and its voice sample follows (moved, dropped or ' +
    'recorded; the people concerned have their voice model recomputed). ' +
    '422 when no segment of the meeting has the label. ' +
    'Broadcasts EntityChanged { entity: transcript_segment, action: updated } ' +
    'and { entity: person, action: updated } for each person whose model changed. ' +
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
