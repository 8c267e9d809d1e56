import { Json, Timestamp, Uuid, z } from '../../openapi';

export const SourceType = z.enum(['recording', 'upload', 'text', 'anecdotal']).openapi('MeetingSourceType');

export const MeetingSchema = z
  .object({
    id: Uuid,
    user_id: Uuid,
    title: z.string(),
    source_type: SourceType,
    start_time: Timestamp,
    end_time: Timestamp.nullable(),
    summary: z.string().nullable(),
    key_points: Json.nullable(),
    headline: z.string().nullable(),
    deleted_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('Meeting', {
    example: {
      id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
      user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      title: 'Weekly sync',
      source_type: 'recording',
      start_time: '2026-11-22T09:00:00.000Z',
      end_time: null,
      summary: null,
      key_points: null,
      headline: null,
      deleted_at: null,
      created_at: '2026-11-22T09:00:00.000Z',
    },
  });

const title = z.string().trim().min(1).max(500);
const text = z.string().max(100_000);

export const CreateMeetingBody = z
  .object({
    title,
    source_type: SourceType.openapi({ description: 'recording for live recordings' }),
    start_time: Timestamp.optional().openapi({ description: 'defaults to now' }),
    end_time: Timestamp.nullable().optional(),
    summary: text.nullable().optional(),
    key_points: Json.optional(),
    headline: z.string().max(1000).nullable().optional(),
  })
  .strict()
  .openapi('CreateMeeting');

export const PatchMeetingBody = z
  .object({
    title: title.optional(),
    start_time: Timestamp.optional(),
    end_time: Timestamp.nullable().optional(),
    summary: text.nullable().optional(),
    key_points: Json.optional(),
    headline: z.string().max(1000).nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchMeeting');
