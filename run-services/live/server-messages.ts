// What the live service sends a client besides the events of lib/events/catalogue.ts. The
// connection only sends messages of these shapes (`ServerMessage`), and the AsyncAPI document
// (asyncapi.ts) is generated from the same schemas.
import { z } from 'zod';
import type { EventBody } from '@mi/lib/events/catalogue';
import type { EventEnvelope } from '@mi/lib/events/outbox';

const uuid = z.string().uuid();
const take = { meeting_id: uuid, audio_version: z.number().int() };
const range = z.tuple([z.number().int(), z.number().int()]).describe('inclusive [start_sequence, end_sequence]');

export const ERROR_CODES = [
  'bad_message',
  'bad_frame',
  'frame_too_large',
  'sequence_out_of_range',
  'too_many_gaps',
  'buffer_full',
  'meeting_not_found',
  'not_a_recording_meeting',
  'recording_in_progress',
  'recording_open',
  'recording_not_found',
  'recording_not_open',
  'recording_stopping',
  'no_recording',
  'unavailable',
] as const;

export const ServerMessageSchemas = {
  ready: z
    .object({ type: z.literal('ready'), connection_id: uuid })
    .describe('The answer to hello; replay (with last_seq) and live events follow.'),
  RecordingStarted: z
    .object({
      type: z.literal('RecordingStarted'),
      ...take,
      transcription_id: uuid.nullable(),
      max_duration_seconds: z.number().int(),
    })
    .describe('The answer to StartRecordingCommand: a new take.'),
  RecordingResumed: z
    .object({
      type: z.literal('RecordingResumed'),
      ...take,
      transcription_id: uuid.nullable(),
      max_duration_seconds: z.number().int(),
      highest_contiguous_sequence: z.number().int(),
      missing_ranges: z.array(range),
    })
    .describe('The answer to ResumeRecordingCommand: resend every frame it does not cover.'),
  RecordingStopped: z
    .object({
      type: z.literal('RecordingStopped'),
      ...take,
      reason: z.enum(['user', 'max_duration', 'connection_closed']),
      highest_contiguous_sequence: z.number().int(),
      missing_ranges: z.array(range),
      gap_upload_deadline: z.string().datetime().nullable(),
    })
    .describe('The take is stopped; upload the missing ranges before gap_upload_deadline.'),
  RecordingReleased: z
    .object({
      type: z.literal('RecordingReleased'),
      ...take,
      reason: z.enum(['resumed_elsewhere', 'not_recording', 'shutdown']),
    })
    .describe('This connection no longer holds the take.'),
  RecordingHealth: z
    .object({
      type: z.literal('RecordingHealth'),
      ...take,
      source: z.enum(['ml', 'core']),
      code: z.string(),
      detail: z.unknown(),
    })
    .describe('Health of the take (docs/websocket.md lists the codes).'),
  RecordingDurationWarning: z
    .object({
      type: z.literal('RecordingDurationWarning'),
      ...take,
      seconds_remaining: z.number().int(),
      max_duration_seconds: z.number().int(),
    })
    .describe('The take stops at its max duration soon.'),
  ReconnectAdvised: z
    .object({ type: z.literal('ReconnectAdvised'), reason: z.enum(['lifetime', 'shutdown']) })
    .describe('Close 1012 follows: reconnect at once with last_seq and resume.'),
  ResyncRequired: z
    .object({
      type: z.literal('ResyncRequired'),
      oldest_seq: z.number().int(),
      reason: z.literal('too_far_behind').optional(),
    })
    .describe(
      'Events after last_seq are no longer all kept, or (reason too_far_behind) more than LIVE_REPLAY_MAX_EVENTS of them would be replayed: ' +
        'refetch what is shown; events go on from oldest_seq.',
    ),
  error: z
    .object({ type: z.literal('error'), code: z.enum(ERROR_CODES), message: z.string(), ref: z.string().nullable() })
    .describe('A message or frame was refused; `ref` names the message type it answers.'),
} as const;

export type ServerMessage = {
  [K in keyof typeof ServerMessageSchemas]: z.infer<(typeof ServerMessageSchemas)[K]>;
}[keyof typeof ServerMessageSchemas];

/** An event as a client receives it: its body with the envelope (without the owner's id). */
export type DeliveredEvent = EventBody & Omit<EventEnvelope, 'user_id'>;

/** Everything the server sends as text. */
export type OutgoingMessage = ServerMessage | DeliveredEvent;
