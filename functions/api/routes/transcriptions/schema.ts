import { MAX_APPENDED_SEGMENTS, MAX_REPLACED_SEGMENTS } from '@mi/lib/repositories/transcript-segments';
import { TRANSCRIPTION_STATUSES } from '@mi/lib/repositories/transcriptions';
import { Timestamp, Uuid, Vector192, z } from '../../openapi';

export const TranscriptionStatus = z.enum(TRANSCRIPTION_STATUSES).openapi('TranscriptionStatus');

export const TranscriptionSchema = z
  .object({
    id: Uuid,
    meeting_id: Uuid,
    status: TranscriptionStatus,
    status_message: z.string().nullable(),
    is_degraded: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Transcription', {
    example: {
      id: '5d2f8a41-6c3b-4e7d-9a0f-1b2c3d4e5f60',
      meeting_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
      status: 'pending',
      status_message: null,
      is_degraded: false,
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

/** PATCH /transcriptions/{id}'s answer: the transcription with the batch pass's claim (decisions.md section 8). */
export const ClaimedTranscriptionSchema = TranscriptionSchema.extend({
  claim_id: Uuid.nullable().openapi({
    description:
      'while synthesizing: the batch pass’s claim. Send it as ML-Claim to renew the claim and with every batch write; null otherwise',
  }),
  claim_expires_at: Timestamp.nullable().openapi({
    description:
      'while synthesizing: when the claim lapses (ML_BATCH_CLAIM_LEASE_SECONDS after the claim or its last renewal); null otherwise',
  }),
}).openapi('ClaimedTranscription');

export const StatusHistorySchema = z
  .object({
    id: Uuid,
    transcription_id: Uuid,
    status: TranscriptionStatus,
    status_message: z.string().nullable(),
    created_at: Timestamp,
  })
  .openapi('TranscriptionStatusHistoryEntry');

export const PatchTranscriptionBody = z
  .object({
    status: TranscriptionStatus.optional().openapi({
      description:
        'pending → transcribing → synthesizing → completed; pending, transcribing, synthesizing → failed; completed, failed → transcribing. Anything else is 409; the current status is no transition, except synthesizing: moving to synthesizing is the batch pass’s claim, a lease (claim_id, claim_expires_at in the answer); the same move with ML-Claim: <claim_id> renews it; without ML-Claim, or with another id, while the transcription is synthesizing: 409 invalid_state (the batch pass claims its take exclusively; an expired claim is released by the sweep, which offers the take again).',
    }),
    status_message: z.string().max(10_000).nullable().optional(),
    is_degraded: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchTranscription');

export const SegmentSchema = z
  .object({
    id: Uuid,
    transcription_id: Uuid,
    person_id: Uuid.nullable(),
    speaker_label: z.string().nullable(),
    text: z.string(),
    start_ms: z.number(),
    end_ms: z.number(),
    confidence: z.number(),
    is_final: z.boolean(),
    is_highlighted: z.boolean(),
    feature_vector: Vector192.nullable(),
  })
  .openapi('TranscriptSegment');

const SegmentInput = z
  .object({
    id: Uuid.optional().openapi({
      description:
        'chosen by the client (the ML references it in segment_ids without reading back); on append, an id already stored with ' +
        'identical content is skipped, with different content (or in another transcription) 409. Default: a new uuid',
    }),
    speaker_label: z.string().max(200).nullable().optional(),
    text: z.string().max(100_000),
    start_ms: z.number().finite().min(0),
    end_ms: z
      .number()
      .finite()
      .min(0)
      .optional()
      .openapi({ description: 'at least start_ms (422 otherwise); default start_ms' }),
    confidence: z.number().finite().min(0).max(1).optional().openapi({ description: 'default 0' }),
    is_final: z
      .boolean()
      .optional()
      .openapi({ description: 'default true; false = interim, broadcast but not stored' }),
    is_highlighted: z.boolean().optional().openapi({ description: 'default false' }),
    feature_vector: Vector192.nullable().optional(),
    person_id: Uuid.nullable().optional().openapi({
      description:
        "a person of the meeting's owner (one merged into another stands for the person it was merged into); a stored speaker-label assignment overrides it",
    }),
  })
  .strict()
  // Times never go backwards (decisions.md section 8); overlapping segments are fine (speakers overlap).
  .refine((s) => s.end_ms === undefined || s.start_ms <= s.end_ms, {
    path: ['end_ms'],
    message: 'must not be before start_ms',
  })
  .openapi('TranscriptSegmentInput', { description: '0 <= start_ms <= end_ms, else 422 naming the segment' });

export const SegmentsBody = z
  .object({
    // The count limits answer 413 (checked in the handlers), not a 422 schema violation.
    segments: z.array(SegmentInput).openapi({
      description: `at most ${MAX_APPENDED_SEGMENTS.toLocaleString('en')} segments on POST, ${MAX_REPLACED_SEGMENTS.toLocaleString('en')} on PUT (413 above)`,
    }),
  })
  .strict()
  .openapi('TranscriptSegments', {
    example: {
      segments: [
        {
          speaker_label: 'SPEAKER_0',
          text: 'hello',
          start_ms: 0,
          end_ms: 1200,
          confidence: 0.93,
          is_final: true,
          feature_vector: null,
          person_id: null,
        },
      ],
    },
  });
