import type { OpenAPIHono } from '@hono/zod-openapi';
import { DomainError } from '@mi/lib/errors';
import { MAX_REPLACED_SEGMENTS } from '@mi/lib/repositories/transcript-segments';
import { replaceSegments } from '@mi/lib/use-cases/transcriptions';
import { fencedBy } from '@mi/lib/use-cases/batch-claims';
import { mlClaimOf } from '../../ml-claim';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, notFoundResponse, op, problemResponse } from '../../openapi';
import { SegmentsBody } from './schema';

const route = op({
  method: 'put',
  path: '/transcriptions/{id}/segments',
  operationId: 'replaceTranscriptSegments',
  tags: ['transcriptions'],
  summary: 'Atomically replace all segments (post-meeting batch rebuild)',
  description:
    "Deletes the transcription's segments and inserts the new set; the meeting's speaker-label assignments are re-applied. The voice samples of the removed segments are dropped and attributed new segments with a non-zero feature_vector become samples; every person concerned has their voice model recomputed in the same transaction. Broadcasts EntityChanged { entity: transcript_segment, action: updated, id: null }, and { entity: person, action: updated } per person whose model changed. At most 20,000 segments (413). Every segment has 0 <= start_ms <= end_ms (422 naming it; overlaps are fine). A person_id of a person merged into another is attributed to the person it was merged into.",
  auth: ['service'],
  mlClaim: true,
  request: { params: IdParam, ...jsonBody(SegmentsBody) },
  responses: {
    204: { description: 'replaced' },
    404: notFoundResponse('transcription'),
    409: problemResponse('the transcription is still in processing (its live recording capture is open)'),
  },
});

export function registerReplaceSegments(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { segments } = c.req.valid('json');
    if (segments.length > MAX_REPLACED_SEGMENTS)
      throw new DomainError('too_large', `at most ${MAX_REPLACED_SEGMENTS} segments per request`);
    const fenced = fencedBy(mlClaimOf(c), { transcriptionId: id }, replaceSegments);
    return commit(c, 204, fenced, { transcriptionId: id, segments });
  });
}
