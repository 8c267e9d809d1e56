// The WebSocket protocol's messages (decisions.md section 5, docs/websocket.md). Events come
// from the OpenAPI document's components; commands and their answers are not REST and are
// written out here.
import type { components } from '../schema.js';

export type Range = [number, number];
type Schemas = components['schemas'];

export type EntityChanged = Schemas['EntityChanged'];
export type AudioStoredProgressEvent = Schemas['AudioStoredProgressEvent'];
export type TranscriptSegmentEvent = Schemas['TranscriptSegmentEvent'];
export type TalkingPointEvent = Schemas['TalkingPointEvent'];

export interface Hello {
  type: 'hello';
  token: string;
  client_id: string;
  last_seq?: number;
  traceparent?: string;
  tracestate?: string;
}

export interface StartRecordingCommand {
  type: 'StartRecordingCommand';
  meeting_id: string;
  encoding: 'pcm_s16le' | 'webm_opus';
  sample_rate?: number;
  max_duration_seconds?: number;
  traceparent?: string;
  tracestate?: string;
}
export interface ResumeRecordingCommand {
  type: 'ResumeRecordingCommand';
  meeting_id: string;
  audio_version: number;
}
export interface StopRecordingCommand {
  type: 'StopRecordingCommand';
  meeting_id: string;
}
export type ClientCommand = Hello | StartRecordingCommand | ResumeRecordingCommand | StopRecordingCommand;

interface Take {
  meeting_id: string;
  audio_version: number;
}
export interface Ready {
  type: 'ready';
  connection_id: string;
}
export interface ResyncRequired {
  type: 'ResyncRequired';
  oldest_seq: number;
}
export interface RecordingStarted extends Take {
  type: 'RecordingStarted';
  transcription_id: string;
  max_duration_seconds: number;
}
export interface RecordingResumed extends Take {
  type: 'RecordingResumed';
  transcription_id: string;
  max_duration_seconds: number;
  highest_contiguous_sequence: number;
  missing_ranges: Range[];
}
export interface RecordingStopped extends Take {
  type: 'RecordingStopped';
  reason: 'user' | 'max_duration' | 'connection_closed';
  highest_contiguous_sequence: number;
  missing_ranges: Range[];
  gap_upload_deadline: string;
}
export interface RecordingReleased extends Take {
  type: 'RecordingReleased';
  reason: 'resumed_elsewhere' | 'not_recording' | 'shutdown';
}
export interface RecordingHealth extends Take {
  type: 'RecordingHealth';
  source: 'ml' | 'core';
  code: string;
  detail: unknown;
}
export interface RecordingDurationWarning extends Take {
  type: 'RecordingDurationWarning';
  seconds_remaining: number;
  max_duration_seconds: number;
}
export interface ReconnectAdvised {
  type: 'ReconnectAdvised';
  reason: 'lifetime' | 'shutdown';
}
export interface ErrorMessage {
  type: 'error';
  code: string;
  message: string;
  ref: string | null;
}

/** Every message the server sends (events carry event_id and seq). */
export type ServerMessage =
  | Ready
  | ResyncRequired
  | RecordingStarted
  | RecordingResumed
  | RecordingStopped
  | RecordingReleased
  | RecordingHealth
  | RecordingDurationWarning
  | ReconnectAdvised
  | ErrorMessage
  | AudioStoredProgressEvent
  | EntityChanged
  | TranscriptSegmentEvent
  | TalkingPointEvent;
