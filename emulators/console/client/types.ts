// The console's names for what its REST calls answer (generated types of @mi/client, as the
// calls in api.ts return them; the views import them from here), and the loose message shape
// the views read (@mi/client types each message exactly).
import type { Api } from './api';

type Answer<K extends keyof Api> = Api[K] extends (...args: never[]) => Promise<infer T> ? T : never;
type Item<K extends keyof Api> = Answer<K> extends { items: (infer T)[] } ? T : never;

export type User = Answer<'me'>;
export type Meeting = Answer<'getMeeting'>;
export type Transcription = Item<'transcriptions'>;
export type Segment = Item<'segments'>;
export type TalkingPoint = Item<'talkingPoints'>;
export type Task = Item<'tasks'>;
export type Person = Item<'people'>;
export type RecordingState = Answer<'recording'>;
export type Take = Item<'takes'>;
export type RecordingEvent = Item<'recordingEvents'>;
export type VoiceSample = Item<'voiceSamples'>;
export type Webhook = Item<'webhooks'>;
export type WebhookAttempt = Item<'webhookDeliveries'>;
export type Range = [number, number];

/** Any message from the server: a `type` and its fields. */
export interface ServerMessage {
  type: string;
  meeting_id?: string;
  event_id?: string;
  seq?: number;
  [field: string]: unknown;
}
