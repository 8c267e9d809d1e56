// Real records of one user, created through the API itself, and valid requests for any
// operation of the OpenAPI document built from them: path parameters and body references are
// filled with that user's ids, bodies generated from the operation's schema.
import { randomUUID } from 'node:crypto';
import { markStopped, markStopping, startRecording } from '@mi/lib/repositories/recordings';
import type { ApiHarness, TestResponse } from '../harness';
import {
  exampleFor,
  fillPath,
  operations,
  resolve,
  types,
  uniqueText,
  type Doc,
  type Operation,
  type Schema,
} from './openapi';

export type Ids = Record<string, string>;

/** The record a path segment's `{id}` names: /meetings/{id} → meeting. */
const PATH_RESOURCE: Record<string, string> = {
  meetings: 'meeting',
  tasks: 'task',
  'sub-tasks': 'subTask',
  notes: 'note',
  threads: 'thread',
  messages: 'message',
  people: 'person',
  'person-summaries': 'personSummary',
  tags: 'tag',
  transcriptions: 'transcription',
  segments: 'segment',
  'transcript-segments': 'segment',
  topics: 'topic',
  'talking-points': 'talkingPoint',
  webhooks: 'webhook',
  exports: 'accountExport',
};

/** Body, query and named path fields that hold a reference, by name. */
const FIELD_RESOURCE: Record<string, string> = {
  meeting_id: 'meeting',
  meetingId: 'meeting',
  person_id: 'person',
  personId: 'person',
  assigned_to: 'person',
  parent_task_id: 'task',
  task_id: 'task',
  taskId: 'task',
  messageId: 'message',
  topic_id: 'topic',
  segment_ids: 'segment',
  transcription_id: 'transcription',
  thread_id: 'thread',
  tag_id: 'tag',
  tagId: 'tag',
};

/** Where the generic request does not fit an operation: which record a parameter takes, body members to set. */
export const REQUEST_OVERRIDES: Record<
  string,
  { params?: Record<string, string>; body?: Record<string, unknown>; query?: Record<string, string> }
> = {
  // pending → pending is no transition; pending → transcribing is.
  updateTranscription: { body: { status: 'transcribing' } },
  // The meeting whose SPEAKER_0 is assigned (the parameter's example), so the owner's DELETE succeeds.
  unassignSpeakerLabel: { params: { id: 'labelledMeeting' } },
  // A second person keeps everything of the body's person (a merge into itself is 422).
  mergePerson: { params: { id: 'keptPerson' } },
};

/** Sub-resources that exist only on one kind of meeting. */
const MEETING_KINDS: [RegExp, string][] = [
  [/^\/meetings\/\{id\}\/recording\b/, 'meetingWithTake'], // a live take
  [/^\/meetings\/\{id\}\/audio\b/, 'meetingWithAudio'], // an uploaded file
];

export function resourceOfParam(op: Operation, name: string): string {
  const override = REQUEST_OVERRIDES[op.operationId]?.params?.[name];
  if (override) return override;
  if (name === 'id') for (const [re, kind] of MEETING_KINDS) if (re.test(op.path)) return kind;
  if (FIELD_RESOURCE[name]) return FIELD_RESOURCE[name];
  const segments = op.path.split('/');
  const at = segments.indexOf(`{${name}}`);
  const resource = PATH_RESOURCE[segments[at - 1]];
  if (!resource)
    throw new Error(
      `${op.operationId}: no fixture for path parameter {${name}} of ${op.path}; add it to test/support/fixtures.ts`,
    );
  return resource;
}

function refResolver(ids: Ids) {
  return (field: string, siblings: Record<string, unknown>): string | undefined => {
    // subject_id / context_id point at whatever their *_type sibling says.
    const typed = siblings[field.replace(/_id$/, '_type')];
    if (typeof typed === 'string' && ids[typed.toLowerCase()]) return ids[typed.toLowerCase()];
    const resource = FIELD_RESOURCE[field];
    return resource ? ids[resource] : undefined;
  };
}

/** The body of raw uploads (audio, recording frames). */
export const RAW_SAMPLE = new Uint8Array(1024).fill(7);

export interface BuiltRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** JSON value for application/json bodies, bytes for raw ones. */
  body?: unknown;
  contentType?: string;
}

/** A valid request for `op` on the records in `ids` (no credentials yet). */
export function buildRequest(
  doc: Doc,
  op: Operation,
  ids: Ids,
  opts: { full?: boolean; bodyIds?: Ids } = {},
): BuiltRequest {
  const override = REQUEST_OVERRIDES[op.operationId] ?? {};
  const pathValues: Record<string, string> = {};
  const query: Record<string, string> = {};
  const headers: Record<string, string> = {};
  for (const p of op.params) {
    if (p.in === 'path' && resolve(doc, p.schema).format !== 'uuid' && resolve(doc, p.schema).example !== undefined) {
      pathValues[p.name] = String(resolve(doc, p.schema).example); // e.g. a frame range
    } else if (p.in === 'path') {
      const resource = resourceOfParam(op, p.name);
      if (!ids[resource]) throw new Error(`${op.operationId}: fixture "${resource}" was not created`);
      pathValues[p.name] = ids[resource];
    } else if (p.in === 'query' && p.required) {
      const s = resolve(doc, p.schema);
      query[p.name] = String(
        s.example ?? s.enum?.[0] ?? s.default ?? (types(s).includes('integer') ? (s.minimum ?? 1) : uniqueText('q')),
      );
    } else if (p.in === 'header' && p.name.toLowerCase() === 'idempotency-key') {
      headers['idempotency-key'] = randomUUID();
    }
  }
  Object.assign(query, override.query);
  const req: BuiltRequest = { method: op.method, path: fillPath(op.path, pathValues), query, headers };
  if (op.body) {
    req.contentType = op.body.contentType;
    if (/json/i.test(op.body.contentType)) {
      const ctx = {
        doc,
        ref: refResolver(opts.bodyIds ?? ids),
        exclude: new Set(Object.values(pathValues)),
        full: opts.full,
      };
      const body = exampleFor(ctx, op.body.schema);
      req.body = override.body && body && typeof body === 'object' ? { ...body, ...override.body } : body;
    } else {
      req.contentType = op.body.contentType.replace('*', 'wav');
      req.body = RAW_SAMPLE;
    }
  }
  return req;
}

export function urlOf(req: BuiltRequest): string {
  const qs = new URLSearchParams(req.query).toString();
  return qs ? `${req.path}?${qs}` : req.path;
}

/** Sends a built request with the given Authorization header value (or none). */
export function send(api: ApiHarness, req: BuiltRequest, authorization?: string): Promise<TestResponse> {
  const headers: Record<string, string> = { ...req.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  if (req.body === undefined) return api.request(req.method, urlOf(req), { headers });
  if (req.body instanceof Uint8Array)
    return api.request(req.method, urlOf(req), {
      headers: { 'content-type': req.contentType!, ...headers },
      raw: req.body as Uint8Array<ArrayBuffer>,
    });
  return api.request(req.method, urlOf(req), {
    headers: { 'content-type': req.contentType!, ...headers },
    body: JSON.stringify(req.body),
  });
}

export interface World {
  api: ApiHarness;
  doc: Doc;
  ops: Operation[];
  owner: { token: string; userId: string };
  other: { token: string; userId: string };
}

export async function createWorld(
  api: ApiHarness,
  doc: Doc,
  names = { owner: 'owner', other: 'other' },
): Promise<World> {
  const user = async (name: string) => {
    const token = await api.token(name);
    const me = await api.request('GET', '/me', { token });
    if (me.status !== 200) throw new Error(`GET /me answered ${me.status}`);
    return { token, userId: me.body.id as string };
  };
  return { api, doc, ops: operations(doc), owner: await user(names.owner), other: await user(names.other) };
}

const SOURCE_TYPES = ['recording', 'upload', 'text', 'anecdotal'];

/** The records a request for `op` refers to: its path parameters and the references its body can hold. */
export function referencedResources(doc: Doc, op: Operation): Set<string> {
  const out = new Set<string>();
  for (const p of op.params)
    if (p.in === 'path' && resolve(doc, p.schema).format === 'uuid') out.add(resourceOfParam(op, p.name));
  const walk = (raw: Schema, depth: number) => {
    const s = resolve(doc, raw);
    if (depth > 8) return;
    for (const [name, prop] of Object.entries<Schema>(s.properties ?? {})) {
      const p = resolve(doc, prop);
      const typeSibling = s.properties[name.replace(/_id$/, '_type')];
      if (typeSibling && name.endsWith('_id'))
        for (const v of resolve(doc, typeSibling).enum ?? []) out.add(String(v).toLowerCase());
      else if (FIELD_RESOURCE[name]) out.add(FIELD_RESOURCE[name]);
      walk(p, depth + 1);
      if (p.items) walk(p.items, depth + 1);
    }
  };
  if (op.body) walk(op.body.schema, 0);
  for (const r of Object.values(REQUEST_OVERRIDES[op.operationId]?.params ?? {})) out.add(r);
  return out;
}

type Call = (operationId: string, as: 'owner' | 'service', patch?: Record<string, unknown>, on?: Ids) => Promise<any>;
type FirstItem = (operationId: string) => Promise<string>;

/** How each record is made, after the records it needs. Steps without a key make links, not records. */
const STEPS: {
  key: string;
  needs: string[];
  make: (call: Call, ids: Ids, first: FirstItem, world: World) => Promise<string | undefined>;
}[] = [
  ...SOURCE_TYPES.map((source_type) => ({
    key: `meeting.${source_type}`,
    needs: [],
    make: async (call: Call) => (await call('createMeeting', 'owner', { source_type })).id,
  })),
  { key: 'meeting', needs: ['meeting.text'], make: async (_c, ids) => ids['meeting.text'] },
  { key: 'person', needs: [], make: async (call) => (await call('createPerson', 'owner')).id },
  { key: 'keptPerson', needs: [], make: async (call) => (await call('createPerson', 'owner')).id },
  { key: 'tag', needs: [], make: async (call) => (await call('createTag', 'owner')).id },
  { key: 'webhook', needs: [], make: async (call) => (await call('createWebhook', 'owner')).id },
  { key: 'accountExport', needs: [], make: async (call) => (await call('createAccountExport', 'owner')).id },
  { key: 'task', needs: [], make: async (call) => (await call('createTask', 'owner')).id },
  { key: 'subTask', needs: ['task'], make: async (call) => (await call('createSubTask', 'owner')).id },
  { key: 'note', needs: [], make: async (call) => (await call('createNote', 'owner')).id },
  { key: 'thread', needs: [], make: async (call) => (await call('createThread', 'owner')).id },
  { key: 'message', needs: ['thread'], make: async (call) => (await call('createChatMessage', 'owner')).id },
  { key: 'personSummary', needs: ['person'], make: async (call) => (await call('createPersonSummary', 'owner')).id },
  { key: 'transcription', needs: ['meeting'], make: async (call) => (await call('createTranscription', 'owner')).id },
  {
    key: 'segment',
    needs: ['transcription'],
    make: async (call, _ids, first) => {
      const feature_vector = Array.from({ length: 192 }, (_, i) => Math.sin(i + 1));
      await call('appendTranscriptSegments', 'service', {
        segments: [{ text: 'hello', start_ms: 0, end_ms: 900, speaker_label: 'SPEAKER_0', feature_vector }],
      });
      return first('listTranscriptSegments');
    },
  },
  {
    key: 'topic',
    needs: ['segment'],
    make: async (call, ids, first) => {
      await call('replaceSynthesis', 'service', {
        topics: [{ name: 'Budget', summary: 'numbers', segment_ids: [ids.segment] }],
      });
      return first('listTopics');
    },
  },
  { key: 'talkingPoint', needs: ['meeting'], make: async (call) => (await call('createTalkingPoint', 'service')).id },
  {
    key: 'meetingWithAudio',
    needs: ['meeting.upload'],
    make: async (call, ids, _first, world) => {
      const meetingId = ids['meeting.upload'];
      await call('uploadMeetingAudio', 'owner', {}, { ...ids, meetingWithAudio: meetingId });
      // No ML here: the upload's batch pass is ended (failed), so that the file may be uploaded again.
      const { api } = world;
      const list = await api.request('GET', `/meetings/${meetingId}/transcriptions`, { token: api.serviceToken });
      for (const t of list.body.items)
        await api.request('PATCH', `/transcriptions/${t.id}`, { token: api.serviceToken, body: { status: 'failed' } });
      return meetingId;
    },
  },
  {
    // A stopped live take (open for gap uploads). Takes are made by the WebSocket service, so
    // the row is written through the recordings repository, after a transcription made here.
    key: 'meetingWithTake',
    needs: ['meeting.recording'],
    make: async (call, ids, _first, world) => {
      const meetingId = ids['meeting.recording'];
      const transcription = await call('createTranscription', 'owner', {}, { ...ids, meeting: meetingId });
      await world.api.rt.db.withTransaction(async (tx) => {
        // Opus frames have no fixed size, so the generic raw sample body fits a range of them.
        const rec = await startRecording(tx, {
          meetingId,
          transcriptionId: transcription.id,
          encoding: 'webm_opus',
          sampleRate: 16_000,
          maxDurationSeconds: 3_600,
          ownerInstance: 'fixtures',
        });
        await markStopping(tx, meetingId, rec.audio_version, 'user');
        await markStopped(tx, meetingId, rec.audio_version, 3_600);
      });
      return meetingId;
    },
  },
  {
    key: 'attendee',
    needs: ['meeting', 'person'],
    make: async (call) => void (await call('addMeetingAttendee', 'owner')),
  },
  {
    key: 'speakerLabel',
    needs: ['segment', 'person'],
    make: async (call) => void (await call('assignSpeakerLabel', 'owner', { speaker_label: 'SPEAKER_0' })),
  },
  { key: 'labelledMeeting', needs: ['speakerLabel'], make: async (_c, ids) => ids.meeting },
];

/**
 * Records of a user (the world's owner unless told), created through the API in dependency
 * order: all of them, or only `only` and what they need. `meeting` is the text meeting; `meeting.<source_type>` each kind.
 */
export async function createFixtures(world: World, only?: Iterable<string>, owner = world.owner): Promise<Ids> {
  const { api, doc, ops } = world;
  const ids: Ids = { user: owner.userId };
  const call: Call = async (operationId, as, patch = {}, on = ids) => {
    const op = ops.find((o) => o.operationId === operationId);
    if (!op) throw new Error(`fixtures need the operation ${operationId}, which the document lacks`);
    const req = buildRequest(doc, op, on);
    if (req.body && typeof req.body === 'object' && !(req.body instanceof Uint8Array))
      req.body = { ...req.body, ...patch };
    const res = await send(api, req, `Bearer ${as === 'owner' ? owner.token : api.serviceToken}`);
    if (res.status >= 300) throw new Error(`fixture ${operationId} answered ${res.status}: ${res.text}`);
    return res.body;
  };
  const first: FirstItem = async (operationId) => {
    const page = await call(operationId, 'owner');
    if (!page?.items?.[0]?.id) throw new Error(`fixture list ${operationId} is empty`);
    return page.items[0].id as string;
  };
  const wanted = new Set(only ?? STEPS.map((s) => s.key));
  for (const step of [...STEPS].reverse()) if (wanted.has(step.key)) for (const n of step.needs) wanted.add(n);
  for (const step of STEPS) {
    if (!wanted.has(step.key)) continue;
    const id = await step.make(call, ids, first, world);
    if (id) ids[step.key] = id;
  }
  return ids;
}
