// The REST client of the console: bearer token, X-Client-Id on every call (so our own tab gets
// no echo of its changes over the WebSocket), an Idempotency-Key on creating POSTs, and
// problem+json errors surfaced as ApiProblem.
import type { Meeting, Page, Person, RecordingEvent, RecordingState, Segment, Task, TalkingPoint, Transcription, User, VoiceSample } from './types';

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${status} ${title}: ${detail}`);
  }
}

export interface RawOptions {
  headers?: Record<string, string>;
  body?: BodyInit;
}

export class Api {
  constructor(
    private readonly token: string,
    readonly clientId: string,
    private readonly base = '',
  ) {}

  async request<T>(method: string, path: string, body?: unknown, opts: { idempotent?: boolean } = {}): Promise<T> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (opts.idempotent) headers['Idempotency-Key'] = crypto.randomUUID();
    const res = await this.raw(method, path, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  /** A request whose non-2xx answer becomes an ApiProblem. */
  async raw(method: string, path: string, opts: RawOptions = {}): Promise<Response> {
    const res = await fetch(this.base + path, {
      method,
      headers: { Authorization: `Bearer ${this.token}`, 'X-Client-Id': this.clientId, ...opts.headers },
      body: opts.body,
    });
    if (!res.ok) throw await problemOf(res);
    return res;
  }

  me = () => this.request<User>('GET', '/me');
  listMeetings = (cursor?: string | null) => this.request<Page<Meeting>>('GET', `/meetings?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
  createMeeting = (title: string, source_type: string) => this.request<Meeting>('POST', '/meetings', { title, source_type }, { idempotent: true });
  getMeeting = (id: string) => this.request<Meeting>('GET', `/meetings/${id}`);
  transcriptions = (meetingId: string) => this.request<Page<Transcription>>('GET', `/meetings/${meetingId}/transcriptions?limit=200`);
  segments = (transcriptionId: string) => this.request<Page<Segment>>('GET', `/transcriptions/${transcriptionId}/segments?limit=200`);
  talkingPoints = (meetingId: string) => this.request<Page<TalkingPoint>>('GET', `/meetings/${meetingId}/talking-points?limit=200`);
  tasks = (meetingId: string) => this.request<Page<Task>>('GET', `/tasks?meeting_id=${meetingId}&limit=200`);
  people = () => this.request<Page<Person>>('GET', '/people?limit=200');
  createPerson = (display_name: string) => this.request<Person>('POST', '/people', { display_name }, { idempotent: true });
  assignSpeaker = (meetingId: string, speaker_label: string, person_id: string) =>
    this.request<{ updated_count: number }>('POST', `/meetings/${meetingId}/speaker-labels`, { speaker_label, person_id }, { idempotent: true });
  unassignSpeaker = (meetingId: string, speaker_label: string) =>
    this.request<void>('DELETE', `/meetings/${meetingId}/speaker-labels/${encodeURIComponent(speaker_label)}`);
  voiceSamples = (personId: string) => this.request<Page<VoiceSample>>('GET', `/people/${personId}/voice-samples?limit=50`);
  recording = (meetingId: string) => this.request<RecordingState>('GET', `/meetings/${meetingId}/recording`);
  recordingEvents = (meetingId: string) => this.request<Page<RecordingEvent>>('GET', `/meetings/${meetingId}/recording/events?limit=100`);
  audioUrl = (meetingId: string) => this.request<{ url: string; expires_at: string; proxy_url?: string }>('GET', `/meetings/${meetingId}/audio-url`);

  /** Gap recovery: the frames start..end of a take, in order, with their SHA-256 digest. */
  async uploadGap(meetingId: string, audioVersion: number, start: number, end: number, bytes: Uint8Array<ArrayBuffer>): Promise<number> {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    const res = await this.raw('PUT', `/meetings/${meetingId}/recording/audio/${start}-${end}?audio_version=${audioVersion}`, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Digest': `sha-256=:${base64(digest)}:` },
      body: bytes,
    });
    return res.status;
  }
}

async function problemOf(res: Response): Promise<ApiProblem> {
  const text = await res.text().catch(() => '');
  try {
    const p = JSON.parse(text) as { title?: string; detail?: string };
    return new ApiProblem(res.status, p.title ?? res.statusText, p.detail ?? text);
  } catch {
    return new ApiProblem(res.status, res.statusText, text.slice(0, 300));
  }
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** POST /console/dev-token (served only with APP_ENV=development). */
export async function mintDevToken(name: string): Promise<string> {
  const res = await fetch('/console/dev-token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  if (!res.ok) throw await problemOf(res);
  return ((await res.json()) as { token: string }).token;
}
