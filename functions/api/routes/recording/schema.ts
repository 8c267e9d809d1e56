import { Json, Timestamp, Uuid, z } from '../../openapi';

const Sequence = z.number().int();
// A closed pair: `items: false` says no element follows the two (JSON Schema 2020-12).
const Range = z.tuple([Sequence, Sequence]).openapi({
  description: 'inclusive [start_sequence, end_sequence]',
  example: [120, 134],
  items: false,
} as {
  description: string;
});

export const RecordingSchema = z
  .object({
    meeting_id: Uuid,
    audio_version: z.number().int(),
    state: z.enum(['recording', 'stopping', 'stopped', 'finalizing', 'finalized']).openapi({
      description:
        'recording (capture open) → stopping (settle + ML drain) → stopped (gap uploads until gap_upload_deadline) → finalizing → finalized',
    }),
    transcription_id: Uuid.nullable(),
    encoding: z.enum(['pcm_s16le', 'webm_opus']),
    sample_rate: z.number().int(),
    highest_contiguous_sequence: Sequence.openapi({
      description: 'every frame 0..this is stored; -1 when frame 0 is not',
    }),
    missing_ranges: z
      .array(Range)
      .openapi({ description: 'ranges below the highest stored frame that are not stored' }),
    frames_stored: z.number().int(),
    bytes_stored: z.number().int(),
    started_at: Timestamp,
    stopped_at: Timestamp.nullable(),
    stop_reason: z.enum(['user', 'max_duration', 'connection_closed']).nullable(),
    gap_upload_deadline: Timestamp.nullable(),
    finalized_at: Timestamp.nullable(),
  })
  .openapi('Recording');

export const TakeSchema = z
  .object({
    audio_version: z.number().int(),
    state: z.enum(['recording', 'stopping', 'stopped', 'finalizing', 'finalized']),
    stop_reason: z.enum(['user', 'max_duration', 'connection_closed']).nullable(),
    encoding: z.enum(['pcm_s16le', 'webm_opus']),
    transcription_id: Uuid.nullable(),
    frames_stored: z.number().int(),
    bytes_stored: z.number().int(),
    is_degraded: z.boolean().openapi({
      description: 'finalized with frames missing (its transcription is marked degraded too); false until finalized',
    }),
    started_at: Timestamp,
    stopped_at: Timestamp.nullable(),
    finalized_at: Timestamp.nullable(),
  })
  .openapi('RecordingTake');

export const RecordingEventSchema = z
  .object({
    id: Uuid,
    seq: z.number().int(),
    meeting_id: Uuid,
    event_type: z.string().openapi({ example: 'gap_uploaded' }),
    payload: Json.nullable(),
    created_at: Timestamp,
  })
  .openapi('RecordingEvent');

export const GapUploadResultSchema = z
  .object({
    audio_version: z.number().int(),
    start_sequence: Sequence,
    end_sequence: Sequence,
    byte_count: z.number().int(),
    sha256: z.string().openapi({ description: 'hex sha-256 of the stored bytes' }),
    highest_contiguous_sequence: Sequence,
    missing_ranges: z.array(Range),
  })
  .openapi('GapUploadResult');

// Beyond the column's range (int4) a take cannot exist: such a value answers 404, like any unknown take.
export const AudioVersionQuery = z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
