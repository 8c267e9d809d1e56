// The one catalogue of events delivered to a user's connections (decisions.md section 5). The
// types of `EventBody`, the constructors every writer uses, the OpenAPI event components and the
// event table of docs/websocket.md all come from here, so an event cannot be misspelled or
// documented apart from what is sent.
import { z } from 'zod';

/** Entities an `EntityChanged` can name. */
export const ENTITIES = [
  'meeting',
  'user',
  'transcription',
  'transcript_segment',
  'person',
  'person_summary',
  'tag',
  'task',
  'sub_task',
  'note',
  'ai_thread',
  'chat_message',
  'talking_point',
  'topic',
  'meeting_attendee',
  'meeting_audio_file',
  'recording',
  'account_export',
] as const;
export type Entity = (typeof ENTITIES)[number];

export const ACTIONS = ['created', 'updated', 'deleted'] as const;
export type EntityAction = (typeof ACTIONS)[number];

const id = z.string().uuid();

/** Event bodies by type: what follows the envelope (`event_id`, `seq`, `occurred_at`). */
export const EventBodySchemas = {
  EntityChanged: z
    .object({
      type: z.literal('EntityChanged'),
      entity: z.enum(ENTITIES),
      action: z.enum(ACTIONS),
      id: id.nullable().describe('the record; for `recording` the meeting id'),
      meeting_id: id.nullable(),
    })
    .describe('A record was created, updated or deleted: refetch it (or drop it) by `entity` and `id`.'),
  TranscriptSegmentEvent: z
    .object({
      type: z.literal('TranscriptSegmentEvent'),
      meeting_id: id,
      transcription_id: id,
      segment: z
        .record(z.string(), z.any())
        .describe('the transcript segment; is_final false for interim segments (not stored)'),
    })
    .describe('A transcript segment arrived from the ML service, with its content.'),
  TalkingPointEvent: z
    .object({ type: z.literal('TalkingPointEvent'), meeting_id: id, talking_point: z.record(z.string(), z.any()) })
    .describe('A talking point arrived from the ML service, with its content.'),
  AudioStoredProgressEvent: z
    .object({
      type: z.literal('AudioStoredProgressEvent'),
      meeting_id: id,
      audio_version: z.number().int(),
      highest_contiguous_sequence: z.number().int().describe('every frame up to here is durable in object storage'),
      frames_stored: z.number().int(),
      bytes_stored: z.number().int(),
    })
    .describe('More of a live take is durable: a client may drop every frame up to `highest_contiguous_sequence`.'),
} as const;

/** The envelope every delivered event carries before its body's fields. */
export const EVENT_ENVELOPE = {
  event_id: id,
  seq: z.number().int().describe('grows with every event of the user; send as last_seq in hello to replay'),
  occurred_at: z.string().datetime(),
};

/** Each event as a client receives it (envelope and body): the documents are generated from these. */
export const deliveredEventSchemas = () =>
  Object.entries(EventBodySchemas).map(
    ([type, body]) => [type, body.extend(EVENT_ENVELOPE).describe(body.description ?? type)] as const,
  );

export type EventType = keyof typeof EventBodySchemas;
export type EventBody = { [K in EventType]: z.infer<(typeof EventBodySchemas)[K]> }[EventType];
export type EventOf<K extends EventType> = z.infer<(typeof EventBodySchemas)[K]>;

// The typed constructors: every writer builds its events with these.

export const changed = (
  entity: Entity,
  action: EntityAction,
  id: string | null,
  meetingId: string | null,
): EventOf<'EntityChanged'> => ({
  type: 'EntityChanged',
  entity,
  action,
  id,
  meeting_id: meetingId,
});

/** A take's state changed (started, stopped, finalized, gap uploaded): refetch GET /meetings/{id}/recording. */
export const recordingChanged = (meetingId: string, action: 'created' | 'updated' = 'updated') =>
  changed('recording', action, meetingId, meetingId);

export const segmentEvent = (
  meetingId: string,
  transcriptionId: string,
  segment: Record<string, unknown>,
): EventOf<'TranscriptSegmentEvent'> => ({
  type: 'TranscriptSegmentEvent',
  meeting_id: meetingId,
  transcription_id: transcriptionId,
  segment,
});

export const talkingPointEvent = (
  meetingId: string,
  talkingPoint: Record<string, unknown>,
): EventOf<'TalkingPointEvent'> => ({
  type: 'TalkingPointEvent',
  meeting_id: meetingId,
  talking_point: talkingPoint,
});

export const progressEvent = (
  p: Omit<EventOf<'AudioStoredProgressEvent'>, 'type'>,
): EventOf<'AudioStoredProgressEvent'> => ({ type: 'AudioStoredProgressEvent', ...p });

/** The markdown table of docs/websocket.md (between its `events:begin`/`events:end` markers). */
export function eventTableMarkdown(): string {
  const rows = Object.entries(EventBodySchemas).map(([type, schema]) => {
    const fields = Object.keys(schema.shape).filter((k) => k !== 'type');
    return `| \`${type}\` | ${fields.map((f) => `\`${f}\``).join(', ')} | ${schema.description ?? ''} |`;
  });
  return [
    '| Event | Fields (after `event_id`, `seq`, `occurred_at`) | Meaning |',
    '|---|---|---|',
    ...rows,
    '',
    `\`EntityChanged\` entities: ${ENTITIES.map((e) => `\`${e}\``).join(', ')}; actions: ${ACTIONS.map((a) => `\`${a}\``).join(', ')}.`,
  ].join('\n');
}
