// The console's REST calls, on @mi/client (generated types, Idempotency-Key, X-Client-Id so our
// own tab gets no echo of its changes over the WebSocket, traceparent, 503/429 retries). Each
// call answers its data or throws ApiProblem.
import { ApiProblem, createRestClient, ok, problemOf, toRanges, type components, type RestClient } from '@mi/client';

export { ApiProblem };

export class Api {
  readonly rest: RestClient;

  constructor(
    token: string,
    readonly clientId: string,
    base = location.origin,
  ) {
    this.rest = createRestClient({ baseUrl: base, token, clientId });
  }

  me = async () => ok(await this.rest.GET('/me'));
  /** Account export: one request (409 while one is unfinished), the newest few with their state and link. */
  requestAccountExport = async () => ok(await this.rest.POST('/me/exports', {}));
  accountExports = async () => ok(await this.rest.GET('/me/exports', { params: { query: { limit: 5 } } }));
  listMeetings = async (cursor?: string | null) =>
    ok(await this.rest.GET('/meetings', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }));
  // The form's value: the server refuses (422) anything but the four source types.
  createMeeting = async (title: string, source_type: string) =>
    ok(
      await this.rest.POST('/meetings', {
        body: { title, source_type: source_type as components['schemas']['MeetingSourceType'] },
      }),
    );
  getMeeting = async (id: string) => ok(await this.rest.GET('/meetings/{id}', { params: { path: { id } } }));
  transcriptions = async (meetingId: string) =>
    ok(
      await this.rest.GET('/meetings/{id}/transcriptions', {
        params: { path: { id: meetingId }, query: { limit: 200 } },
      }),
    );
  segments = async (transcriptionId: string) =>
    ok(
      await this.rest.GET('/transcriptions/{id}/segments', {
        params: { path: { id: transcriptionId }, query: { limit: 200 } },
      }),
    );
  talkingPoints = async (meetingId: string) =>
    ok(
      await this.rest.GET('/meetings/{id}/talking-points', {
        params: { path: { id: meetingId }, query: { limit: 200 } },
      }),
    );
  tasks = async (meetingId: string) =>
    ok(await this.rest.GET('/tasks', { params: { query: { meeting_id: meetingId, limit: 200 } } }));
  people = async () => ok(await this.rest.GET('/people', { params: { query: { limit: 200 } } }));
  /** The person with exactly this display_name (unique per user), found through the list's q filter. */
  personNamed = async (name: string) => {
    const { items } = ok(await this.rest.GET('/people', { params: { query: { q: name, limit: 200 } } }));
    return items.find((p) => p.display_name === name) ?? null;
  };
  createPerson = async (display_name: string) => ok(await this.rest.POST('/people', { body: { display_name } }));
  assignSpeaker = async (meetingId: string, speaker_label: string, person_id: string) =>
    ok(
      await this.rest.POST('/meetings/{id}/speaker-labels', {
        params: { path: { id: meetingId } },
        body: { speaker_label, person_id },
      }),
    );
  unassignSpeaker = async (meetingId: string, speaker_label: string) =>
    ok(
      await this.rest.DELETE('/meetings/{id}/speaker-labels/{speaker_label}', {
        params: { path: { id: meetingId, speaker_label } },
      }),
    );
  /** Every label of the meeting, assigned or not, with suggestions for the unassigned ones. */
  speakerLabels = async (meetingId: string) =>
    ok(await this.rest.GET('/meetings/{id}/speaker-labels', { params: { path: { id: meetingId } } }));
  /** Everything of `otherId` moves to `keepId`; `otherId` is deleted. */
  mergePeople = async (keepId: string, otherId: string) =>
    ok(await this.rest.POST('/people/{id}/merge', { params: { path: { id: keepId } }, body: { person_id: otherId } }));
  voiceSamples = async (personId: string) =>
    ok(await this.rest.GET('/people/{id}/voice-samples', { params: { path: { id: personId }, query: { limit: 50 } } }));
  recording = async (meetingId: string) => {
    const state = ok(await this.rest.GET('/meetings/{id}/recording', { params: { path: { id: meetingId } } }));
    return { ...state, missing_ranges: toRanges(state.missing_ranges) };
  };
  /** The takes, oldest first; the first page is enough for a console (200 takes). */
  takes = async (meetingId: string) =>
    ok(
      await this.rest.GET('/meetings/{id}/recording/takes', {
        params: { path: { id: meetingId }, query: { limit: 200 } },
      }),
    );
  recordingEvents = async (meetingId: string) =>
    ok(
      await this.rest.GET('/meetings/{id}/recording/events', {
        params: { path: { id: meetingId }, query: { limit: 100 } },
      }),
    );
  search = async (q: string, sort: 'relevance' | 'recent', cursor?: string | null) =>
    ok(await this.rest.GET('/search', { params: { query: { q, sort, limit: 20, ...(cursor ? { cursor } : {}) } } }));
  /** The transcript in one export format, as the text a download saves. */
  exportTranscript = async (transcriptionId: string, format: 'vtt' | 'srt' | 'txt' | 'json') =>
    ok(
      await this.rest.GET('/transcriptions/{id}/export', {
        params: { path: { id: transcriptionId }, query: { format } },
        parseAs: 'text',
      }),
    ) as string;
  /** A segment as the server has it now, with its ETag (the If-Match of an edit). */
  segment = async (id: string) => {
    const result = await this.rest.GET('/transcript-segments/{id}', { params: { path: { id } } });
    return { segment: ok(result), etag: result.response.headers.get('etag') };
  };
  /**
   * A segment's new text and/or speaker label, conditional on `etag` (412: someone changed it
   * since). Answers the segment and its new ETag.
   */
  updateSegment = async (id: string, patch: { text?: string; speaker_label?: string }, etag: string | null) => {
    const result = await this.rest.PATCH('/transcript-segments/{id}', {
      params: { path: { id } },
      body: patch,
      headers: etag ? { 'If-Match': etag } : {},
    });
    return { segment: ok(result), etag: result.response.headers.get('etag') };
  };
  /** The caller's webhooks, oldest first (the first page holds them all: at most 20 per user). */
  webhooks = async () => ok(await this.rest.GET('/webhooks', { params: { query: { limit: 50 } } }));
  /** Answers the webhook with its secret: shown this once. */
  createWebhook = async (url: string, event_types: components['schemas']['WebhookInput']['event_types']) =>
    ok(await this.rest.POST('/webhooks', { body: { url, event_types } }));
  testWebhook = async (id: string) => ok(await this.rest.POST('/webhooks/{id}/test', { params: { path: { id } } }));
  /** A new secret (shown once); the previous one keeps signing for the overlap unless `expire_previous`. */
  rotateWebhookSecret = async (id: string, expire_previous: boolean) =>
    ok(await this.rest.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } }, body: { expire_previous } }));
  webhookDeliveries = async (id: string) =>
    ok(await this.rest.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } }));
  /** An upload meeting's audio file, its bytes as the body (PUT /meetings/{id}/audio). */
  uploadAudio = async (meetingId: string, file: Blob) =>
    ok(
      await this.rest.PUT('/meetings/{id}/audio', {
        params: { path: { id: meetingId } },
        headers: { 'content-type': file.type || 'application/octet-stream' },
        body: file as never,
        bodySerializer: (b: unknown) => b as Blob,
      }),
    );
  audioUrl = async (meetingId: string, audio_version?: number) =>
    ok(
      await this.rest.GET('/meetings/{id}/audio-url', {
        params: { path: { id: meetingId }, query: audio_version === undefined ? {} : { audio_version } },
      }),
    );
}

/** POST /console/dev-token (served only with APP_ENV=development; not part of the REST API). */
export async function mintDevToken(name: string): Promise<string> {
  const res = await fetch('/console/dev-token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const body = await res.json().catch(() => undefined);
  if (!res.ok) throw problemOf(res, body);
  return (body as { token: string }).token;
}
