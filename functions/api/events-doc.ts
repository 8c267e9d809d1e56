// Event payloads delivered over the WebSocket (decisions.md section 5), documented as
// OpenAPI components so client teams have one reference for REST and events.
import { z, type OpenAPIHono } from '@hono/zod-openapi';

type OpenAPIRegistry = OpenAPIHono['openAPIRegistry'];

const envelope = {
  event_id: z.string().uuid(),
  seq: z.number().int().describe('grows with every event of the user; send as last_seq in hello to replay'),
  occurred_at: z.string().datetime(),
};

export const EventSchemas = {
  EntityChanged: z.object({
    type: z.literal('EntityChanged'),
    ...envelope,
    entity: z.string().openapi({ example: 'meeting', description: 'meeting, user, transcription, transcript_segment, person, person_summary, tag, task, sub_task, note, ai_thread, chat_message, talking_point, topic, meeting_attendee, meeting_audio_file' }),
    action: z.enum(['created', 'updated', 'deleted']),
    id: z.string().uuid().nullable(),
    meeting_id: z.string().uuid().nullable(),
  }),
  TranscriptSegmentEvent: z.object({
    type: z.literal('TranscriptSegmentEvent'),
    ...envelope,
    meeting_id: z.string().uuid(),
    transcription_id: z.string().uuid(),
    segment: z.record(z.string(), z.any()).describe('the transcript segment; is_final false for interim segments (not stored)'),
  }),
  TalkingPointEvent: z.object({ type: z.literal('TalkingPointEvent'), ...envelope, meeting_id: z.string().uuid(), talking_point: z.record(z.string(), z.any()) }),
  AudioStoredProgressEvent: z.object({
    type: z.literal('AudioStoredProgressEvent'),
    ...envelope,
    meeting_id: z.string().uuid(),
    audio_version: z.number().int(),
    highest_contiguous_sequence: z.number().int().describe('every frame up to here is durable in object storage'),
    frames_stored: z.number().int(),
    bytes_stored: z.number().int(),
  }),
};

export function eventComponents(registry: OpenAPIRegistry) {
  for (const [name, schema] of Object.entries(EventSchemas)) registry.register(name, schema);
}
