// The WebSocket protocol of decisions.md section 5 (plus the additions in docs/websocket.md):
// client commands, close codes, error codes, audio frame framing.
import { z } from 'zod';
import { validTraceContext, type TraceContext } from '@mi/lib/telemetry/trace-context';
import type { ERROR_CODES } from './server-messages';

export const CloseCode = {
  /** The server restarts or the connection reached its lifetime: reconnect and resume. */
  reconnect: 1012,
  /** The server failed on the hello or on reading the outbox: reconnect with last_seq. */
  serverError: 1011,
  badHello: 4400,
  unauthorized: 4401,
  helloTimeout: 4408,
  /** The token is valid but its email belongs to another account (decisions.md section 6). */
  accountConflict: 4409,
  /** The account was erased (DELETE /me), on whichever instance the connection is. */
  accountErased: 4410,
  /** The client did not read what the server sent fast enough (send queue bound). */
  slowReader: 4413,
  tooManyConnections: 4429,
} as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const uuid = z.string().uuid();

/** The largest value of an integer (int4) column, e.g. audio_version. */
export const INT4_MAX = 2_147_483_647;
// Integers beyond this lose precision in JSON numbers; every integer field is bounded by it.
const int = () => z.number().int().max(Number.MAX_SAFE_INTEGER);

// W3C trace context a client may send with hello or a start: never a reason to refuse the
// message (the socket's message size bounds it); traceOf keeps what is valid, lib/telemetry/trace-context.ts.
const traceparent = z.unknown().optional();
const tracestate = z.unknown().optional();

export const Hello = z.object({
  type: z.literal('hello'),
  token: z.string().min(1).max(16_384),
  client_id: uuid,
  last_seq: int().min(0).optional(),
  traceparent,
  tracestate,
});

export const StartRecording = z
  .object({
    type: z.literal('StartRecordingCommand'),
    meeting_id: uuid,
    encoding: z.enum(['pcm_s16le', 'webm_opus']),
    sample_rate: z.number().int().min(8_000).max(192_000).default(16_000),
    max_duration_seconds: z.number().int().min(1).max(INT4_MAX).optional(),
    traceparent,
    tracestate,
  })
  .strict();

export const ResumeRecording = z
  .object({ type: z.literal('ResumeRecordingCommand'), meeting_id: uuid, audio_version: int().min(1) })
  .strict();

export const StopRecording = z.object({ type: z.literal('StopRecordingCommand'), meeting_id: uuid }).strict();

export type StartCommand = z.infer<typeof StartRecording>;
export type ResumeCommand = z.infer<typeof ResumeRecording>;
export type StopCommand = z.infer<typeof StopRecording>;

export const Command = z.discriminatedUnion('type', [StartRecording, ResumeRecording, StopRecording]);
export type HelloMessage = z.infer<typeof Hello>;

/** The valid trace context a message (or an upgrade request's headers) carries; null when none. */
export function traceOf(m: { traceparent?: unknown; tracestate?: unknown }): TraceContext | null {
  return validTraceContext(m);
}
export type ClientCommand = z.infer<typeof Command>;

/** The header of every binary message: the frame's sequence number, u64 big-endian. */
export const FRAME_HEADER_BYTES = 8;
/** Spec: every frame is 100 ms of audio. */
export const FRAME_MS = 100;

/** The sequence number of a binary message, or null when it has no (usable) header. */
export function frameSequence(data: Buffer): number | null {
  if (data.length <= FRAME_HEADER_BYTES) return null;
  // Two 32-bit halves, not a BigInt: no allocation per frame. Above 2^53 − 1 is not a number we keep.
  const high = data.readUInt32BE(0);
  return high > 0x1fffff ? null : high * 0x1_0000_0000 + data.readUInt32BE(4);
}

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'message'}: ${i.message}`).join('; ');
}
