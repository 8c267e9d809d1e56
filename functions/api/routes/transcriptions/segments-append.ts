import type { OpenAPIHono } from '@hono/zod-openapi';
import { DomainError } from '@mi/lib/errors';
import { MAX_APPENDED_SEGMENTS } from '@mi/lib/repositories/transcript-segments';
import { appendSegments } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, notFoundResponse, op, problemResponse } from '../../openapi';
import { SegmentsBody } from './schema';

const route = op({
  method: 'post',
  path: '/transcriptions/{id}/segments',
  operationId: 'appendTranscriptSegments',
  tags: ['transcriptions'],
  summary: 'Append segments (live path)',
  description:
    "Final segments are stored, get the meeting's stored speaker-label assignments, and are each broadcast as TranscriptSegmentEvent. Interim segments (is_final false) are broadcast with is_final false but not stored. A stored segment attributed to a person (by an assignment or its own person_id) with a non-zero feature_vector becomes a voice sample of that person, whose voice model is updated in the same transaction (EntityChanged { entity: person, action: updated } per person). At most 5,000 segments (413). Every segment has 0 <= start_ms <= end_ms (422 naming it; overlaps are fine). A person_id of a person merged into another is attributed to the person it was merged into. " +
    'Idempotent: a repeat with the same Idempotency-Key and body is answered 204 again and adds nothing; segments may carry their own `id` (see TranscriptSegmentInput).',
  auth: ['service'],
  idempotent: 'optional',
  request: { params: IdParam, ...jsonBody(SegmentsBody) },
  responses: {
    204: { description: 'appended' },
    404: notFoundResponse('transcription'),
    409: problemResponse(
      'invalid_state: the transcription is completed or failed (a late live write never changes a finished transcript; accepted while synthesizing); already_exists: a segment id is stored with different content or in another transcription; or the Idempotency-Key is in use',
    ),
  },
});

export function registerAppendSegments(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { segments } = c.req.valid('json');
    if (segments.length > MAX_APPENDED_SEGMENTS)
      throw new DomainError('too_large', `at most ${MAX_APPENDED_SEGMENTS} segments per request`);
    return commit(c, 204, appendSegments, { transcriptionId: id, segments });
  });
}
