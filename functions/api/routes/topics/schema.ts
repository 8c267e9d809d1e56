import { Timestamp, Uuid, z } from '../../openapi';

export const TopicSchema = z
  .object({
    id: Uuid,
    meeting_id: Uuid,
    name: z.string(),
    summary: z.string(),
    is_final: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    segment_ids: z.array(Uuid).openapi({ description: 'the transcript segments of the topic (topic_segment)' }),
  })
  .openapi('Topic');
