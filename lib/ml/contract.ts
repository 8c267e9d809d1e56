// The core ↔ ML contract, declared once: what the core sends the ML service and what it accepts
// back on the live path (POST /streaming, the audio socket, DELETE /streaming/{id}) and the
// batch path's `recording.finalized` message. The core (run-services/live/ml-client.ts, the
// finalize step) and the published documents (./documents.ts) use these schemas, so they cannot
// drift apart; our stand-in ML (emulators/ml) is written from the documents instead, as an ML team's
// service would be. docs/ml-integration.md tells the story.
import { z } from 'zod';

const Uuid = z.string().uuid();

export const AUDIO_ENCODINGS = ['pcm_s16le', 'webm_opus'] as const;

/** POST /streaming: the core asks for a session of one take, from `start_sequence` on. */
export const StreamingStart = z
  .object({
    meeting_id: Uuid,
    transcription_id: Uuid.describe('where the live segments go: POST /transcriptions/{id}/segments'),
    audio_version: z.number().int().min(1).describe('the take (1, 2, … per meeting)'),
    encoding: z.enum(AUDIO_ENCODINGS),
    sample_rate: z.number().int().min(8_000).max(192_000),
    start_sequence: z
      .number()
      .int()
      .min(0)
      .describe(
        'the first frame this session receives; above 0 the take resumes (another instance, or after an outage)',
      ),
  })
  .describe('Starts (or resumes) a streaming session of one take. Unknown fields are to be ignored.');
export type StreamingStart = z.infer<typeof StreamingStart>;

/** The 201 answer to POST /streaming; other fields are ignored by the core. */
export const StreamingSession = z
  .object({
    id: z.string().min(1).max(200).describe('the session id: DELETE /streaming/{id} ends it'),
    audio_url: z
      .string()
      .url()
      .refine((u) => /^wss?:$/.test(new URL(u).protocol), 'must be a ws:// or wss:// URL')
      .describe('the WebSocket the core opens for this session’s frames'),
  })
  .describe('201 Created: the session. The core opens audio_url with the same Authorization header.');
export type StreamingSession = z.infer<typeof StreamingSession>;

/** The 200 answer to DELETE /streaming/{id} (a 204 means drained, nothing to report). */
export const DrainReport = z
  .object({
    drained: z.boolean().describe('true when every frame received was processed before answering'),
    processed: z.number().int().min(0).optional(),
    dropped: z.number().int().min(0).optional(),
  })
  .describe('200: how the drain went. 204 (no body) is the same as {"drained": true}.');
export type DrainReport = z.infer<typeof DrainReport>;

/** A binary audio message on the socket: 8 bytes big-endian unsigned sequence, then one frame. */
export const FRAME_HEADER_BYTES = 8;
/** A text message from the ML larger than this closes the socket (1009); frames never come back. */
export const ML_MESSAGE_MAX_BYTES = 64 * 1024;

export const MlWarning = z
  .object({
    type: z.literal('warning'),
    code: z.string().min(1).max(100).describe('e.g. insight_warning, no_audio_detected, backpressure'),
    detail: z.record(z.string(), z.unknown()).optional(),
  })
  .describe('A health observation: recorded in the take’s history and shown to its user as RecordingHealth.');

export const MlDropped = z
  .object({
    type: z.literal('dropped'),
    count: z.number().int().min(0).describe('frames dropped since the last report'),
    total: z.number().int().min(0).optional().describe('frames dropped in this session'),
  })
  .describe('Frames the ML could not process (its queue was full); reported to the user at most every 2 s.');

/** What the ML may send on the audio socket (text messages, JSON). */
export const MlMessage = z.discriminatedUnion('type', [MlWarning, MlDropped]);
export type MlMessage = z.infer<typeof MlMessage>;

/** The core's answer to an ML message it cannot use: sent on the socket, logged and counted. */
export const CoreRejection = z
  .object({
    type: z.literal('rejected'),
    reason: z.enum(['not_json', 'unknown_type', 'invalid', 'binary']),
    detail: z.string(),
  })
  .describe('Sent by the core for an ML message it did not use (unknown type, invalid fields, not JSON, binary).');
export type CoreRejection = z.infer<typeof CoreRejection>;

/** Reads an ML text message: the message, or the rejection to answer with. */
export function parseMlMessage(
  text: string,
): { ok: true; message: MlMessage } | { ok: false; rejection: CoreRejection } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, rejection: { type: 'rejected', reason: 'not_json', detail: 'a text message must be JSON' } };
  }
  const type = (json as { type?: unknown } | null)?.type;
  if (type !== 'warning' && type !== 'dropped') {
    const detail = `unknown message type ${JSON.stringify(type ?? null).slice(0, 100)}; known: warning, dropped`;
    return { ok: false, rejection: { type: 'rejected', reason: 'unknown_type', detail } };
  }
  const parsed = MlMessage.safeParse(json);
  if (parsed.success) return { ok: true, message: parsed.data };
  const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ');
  return { ok: false, rejection: { type: 'rejected', reason: 'invalid', detail: detail.slice(0, 1000) } };
}

/** The batch path's message: published on PUBSUB_TOPIC_RECORDING_FINALIZED once a take is finalized. */
export const RecordingFinalized = z
  .object({
    meeting_id: Uuid,
    audio_version: z.number().int().min(1),
    transcription_id: Uuid.nullable().describe('the take’s transcription (claim it: PATCH to synthesizing)'),
    storage_path: z
      .string()
      .nullable()
      .describe('the composed audio (null: no frame was stored); read it through GET /meetings/{id}/audio-url'),
    is_degraded: z.boolean().describe('true when frames are missing (missing_ranges)'),
    missing_ranges: z
      .array(z.tuple([z.number().int().min(0), z.number().int().min(0)]))
      .describe('inclusive [first, last] sequence ranges never received'),
    attempt: z
      .number()
      .int()
      .min(1)
      .describe(
        '1 when the take is finalized; one more each time the core offers it again because a batch pass let its claim expire',
      ),
    source: z
      .enum(['take', 'upload'])
      .optional()
      .describe(
        'absent or `take`: a live take (see above). `upload`: the meeting’s uploaded file (any audio/* type, no live segments; `storage_path` is that object, read it through GET /meetings/{id}/audio-url without audio_version; `audio_version` is 1)',
      ),
  })
  .describe(
    'recording.finalized: one take is finalized, or an audio file was uploaded (or either is offered again after a claim expired). At least once: the transcription claim dedupes.',
  );
export type RecordingFinalized = z.infer<typeof RecordingFinalized>;

/** The ML's work-queue subscription on the topic: the same name locally and in Terraform. */
export const mlBatchSubscription = (topic: string) => `${topic}.ml-batch`;
