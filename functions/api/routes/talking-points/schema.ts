import { Timestamp, Uuid, z } from '../../openapi';

export const TalkingPointSchema = z
  .object({
    id: Uuid,
    meeting_id: Uuid,
    topic_id: Uuid.nullable(),
    content: z.string(),
    is_final: z.boolean(),
    created_at: Timestamp,
    deleted_at: Timestamp.nullable(),
    segment_ids: z
      .array(Uuid)
      .openapi({ description: 'the transcript segments it was drawn from (talking_point_segment)' }),
  })
  .openapi('TalkingPoint', {
    example: {
      id: '9e6b1c2d-3f4a-4b5c-8d7e-6f5a4b3c2d1e',
      meeting_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
      topic_id: null,
      content: 'Budget for Q3 is approved',
      is_final: false,
      created_at: '2026-11-22T09:05:00.000Z',
      deleted_at: null,
      segment_ids: ['1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d'],
    },
  });

export const CreateTalkingPointBody = z
  .object({
    content: z.string().trim().min(1).max(10_000),
    topic_id: Uuid.nullable().optional().openapi({ description: 'a topic of this meeting' }),
    is_final: z.boolean().optional().openapi({ description: 'default false' }),
    segment_ids: z.array(Uuid).max(5000).optional(),
  })
  .strict()
  .openapi('CreateTalkingPoint');
