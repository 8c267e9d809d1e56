// The shapes the console reads: REST resources (decisions.md sections 3-4) and the WebSocket
// messages of section 5. Only the fields the console uses.
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface User {
  id: string;
  username: string;
  email: string;
}

export interface Meeting {
  id: string;
  title: string;
  source_type: 'recording' | 'upload' | 'text' | 'anecdotal';
  start_time: string;
  end_time: string | null;
  summary: string | null;
  headline: string | null;
  created_at: string;
}

export interface Transcription {
  id: string;
  status: string;
  is_degraded: boolean;
  created_at: string;
}

export interface Segment {
  id: string;
  transcription_id: string;
  person_id: string | null;
  speaker_label: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
  is_final: boolean;
}

export interface TalkingPoint {
  id: string;
  content: string;
  is_final: boolean;
  created_at: string;
}

export interface Task {
  id: string;
  content: string;
  status: string;
  source: string;
  due_date: string | null;
}

export interface Person {
  id: string;
  display_name: string;
  voice_model_status: string;
  voice_confidence: number | null;
}

/** GET /people/{id}/voice-samples: one segment whose embedding shapes the person's voice. */
export interface VoiceSample {
  meeting_id: string;
  segment_id: string;
  speaker_label: string | null;
  created_at: string;
}

export type Range = [number, number];

export interface RecordingState {
  state: string;
  audio_version: number;
  highest_contiguous_sequence: number;
  missing_ranges: Range[];
  frames_stored: number;
  gap_upload_deadline: string | null;
  stop_reason: string | null;
}

export interface RecordingEvent {
  id: string;
  event_type: string;
  payload: unknown;
  created_at: string;
}

/** Any message from the server: a `type` and its fields. */
export interface ServerMessage {
  type: string;
  meeting_id?: string;
  event_id?: string;
  seq?: number;
  [field: string]: unknown;
}
