// Body limits: a body above its limit is refused with 413 before it is read whole, whether it
// declares its length or streams chunked, whatever Content-Type it claims. The bodies here
// never end: an answer at all proves the server did not wait for the whole of it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../harness';
import { createFixtures, createWorld, type Ids, type World } from '../support/fixtures';
import { rawRequest, streamUntilAnswered } from '../support/http';
import { fetchDoc } from '../support/openapi';

const JSON_LIMIT = 256 * 1024;
const UPLOAD_LIMIT = 1024 * 1024;
const CHUNK_LIMIT = 64 * 1024;

const api = await startApi({
  API_MAX_JSON_BYTES: String(JSON_LIMIT),
  RECORDING_MAX_UPLOAD_BYTES: String(UPLOAD_LIMIT),
  RECORDING_MAX_CHUNK_BYTES: String(CHUNK_LIMIT),
});
const doc = await fetchDoc(api);
const has = (operationId: string) =>
  Object.values(doc.paths).some((item) => Object.values(item).some((o: any) => o.operationId === operationId));
let world: World;
let ids: Ids;
let auth: string;

beforeAll(async () => {
  world = await createWorld(api, doc);
  ids = await createFixtures(world, ['meeting', 'person', 'transcription', 'meetingWithAudio', 'meetingWithTake']);
  auth = `Bearer ${world.owner.token}`;
}, 120_000);
afterAll(() => api.close());

function expect413(outcome: { status: number; text: string }, what: string) {
  expect(outcome.status, `${what}: ${outcome.text.slice(0, 200)}`).toBe(413);
  const problem = JSON.parse(outcome.text);
  expect(problem).toMatchObject({
    type: expect.stringContaining('payload_too_large'),
    status: 413,
    detail: expect.any(String),
  });
}

describe('JSON and other non-raw bodies', () => {
  const createMeeting = (contentType?: string) => ({
    method: 'POST',
    path: '/meetings',
    headers: {
      authorization: auth,
      'idempotency-key': randomUUID(),
      ...(contentType ? { 'content-type': contentType } : {}),
    },
  });

  for (const contentType of ['application/json', 'application/merge-patch+json', 'text/plain', undefined]) {
    it(`should answer 413 at once to a declared Content-Length above the limit (${contentType ?? 'no Content-Type'})`, async () => {
      const { method, path, headers } = createMeeting(contentType);
      const out = await streamUntilAnswered(api.url, path, {
        method,
        headers,
        declaredLength: 100 * JSON_LIMIT,
        maxBytes: 64 * JSON_LIMIT,
      });
      // Only 64 of the declared 100 limits are sent: an answer at all shows it came before the body.
      expect413(out, `declared ${100 * JSON_LIMIT} bytes`);
    });

    it(`should answer 413 to a chunked body once it passes the limit (${contentType ?? 'no Content-Type'})`, async () => {
      const { method, path, headers } = createMeeting(contentType);
      const out = await streamUntilAnswered(api.url, path, { method, headers, maxBytes: 64 * JSON_LIMIT });
      expect413(out, 'endless chunked body');
      expect(out.sent).toBeGreaterThan(JSON_LIMIT); // refused for its size, not before it had any
    });
  }

  it('should refuse a raw Content-Type on a JSON operation with 415 before reading it', async () => {
    for (const [method, path, extra] of [
      ['POST', '/meetings', { 'idempotency-key': randomUUID() }],
      ['PATCH', `/meetings/${ids.meeting}`, {}],
    ] as const) {
      const out = await streamUntilAnswered(api.url, path, {
        method,
        headers: { authorization: auth, 'content-type': 'application/octet-stream', ...extra },
        maxBytes: 64 * JSON_LIMIT,
      });
      expect(out.status, `${method} ${path}: ${out.text}`).toBe(415);
    }
  });

  it('should accept a body just below the limit and refuse one just above', async () => {
    const body = (size: number) => {
      const base = JSON.stringify({ title: 'limit', source_type: 'text', key_points: [] });
      return base.replace('[]', `["${'x'.repeat(size - base.length - 2)}"]`);
    };
    const send = (text: string) =>
      rawRequest(api.url, '/meetings', {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: text,
      });
    const below = body(JSON_LIMIT);
    expect(Buffer.byteLength(below)).toBe(JSON_LIMIT);
    expect((await send(below)).status).toBe(201);
    expect413(await send(body(JSON_LIMIT + 1)), 'one byte over');
  });
});

describe('segments per request', () => {
  const segments = (n: number) =>
    JSON.stringify({ segments: Array.from({ length: n }, (_, i) => ({ text: 's', start_ms: i })) });

  for (const [method, max] of [
    ['POST', 5_000],
    ['PUT', 20_000],
  ] as const) {
    it(`should answer 413 to ${max + 1} segments and accept ${max} (${method})`, async () => {
      expect(
        has(method === 'POST' ? 'appendTranscriptSegments' : 'replaceTranscriptSegments'),
        'the operation this test covers is missing: renamed?',
      ).toBe(true);
      const send = (n: number) => {
        const body = segments(n);
        // the count rule, not the byte limit
        expect(Buffer.byteLength(body)).toBeLessThan(api.rt.config.API_MAX_BULK_JSON_BYTES);
        return rawRequest(api.url, `/transcriptions/${ids.transcription}/segments`, {
          method,
          headers: { authorization: `Bearer ${api.serviceToken}`, 'content-type': 'application/json' },
          body,
        });
      };
      expect413(await send(max + 1), `${max + 1} segments`);
      expect((await send(max)).status).toBe(204);
    });
  }
});

describe('raw uploads', () => {
  it('should answer 413 to an audio upload declaring more than RECORDING_MAX_UPLOAD_BYTES, and to one streaming past it', async () => {
    expect(has('uploadMeetingAudio'), 'the operation this test covers is missing: renamed?').toBe(true);
    const path = `/meetings/${ids.meetingWithAudio}/audio`;
    const headers = { authorization: auth, 'content-type': 'audio/wav' };
    const declared = await streamUntilAnswered(api.url, path, {
      method: 'PUT',
      headers,
      declaredLength: 100 * UPLOAD_LIMIT,
      maxBytes: 16 * UPLOAD_LIMIT,
    });
    expect413(declared, 'declared upload'); // only 16 of 100 limits sent: answered before the body
    expect413(
      await streamUntilAnswered(api.url, path, {
        method: 'PUT',
        headers,
        maxBytes: 32 * UPLOAD_LIMIT,
        chunkBytes: 64 * 1024,
      }),
      'endless chunked upload',
    );
  });

  it('should answer 413 to a gap upload above RECORDING_MAX_CHUNK_BYTES, declared or streamed', async () => {
    expect(has('uploadRecordingGap'), 'the operation this test covers is missing: renamed?').toBe(true);
    const path = `/meetings/${ids.meetingWithTake}/recording/audio/0-9?audio_version=1`;
    const headers = { authorization: auth, 'content-type': 'application/octet-stream' };
    expect413(
      await streamUntilAnswered(api.url, path, {
        method: 'PUT',
        headers,
        declaredLength: 100 * CHUNK_LIMIT,
        maxBytes: 64 * CHUNK_LIMIT,
      }),
      'declared gap',
    );
    expect413(
      await streamUntilAnswered(api.url, path, { method: 'PUT', headers, maxBytes: 128 * CHUNK_LIMIT }),
      'endless chunked gap',
    );
  });
});
