import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { DomainError, notFound, unprocessable } from '@mi/lib/errors';
import { attachUploadedAudio } from '@mi/lib/use-cases/audio';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { ObjectTooLargeError, type StoredObject } from '@mi/lib/adapters/storage';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, problemResponse } from '../../openapi';
import { assertDeclaredLength } from '../recording/body';
import { AudioFileSchema, binaryContent } from './schema';

const AUDIO_TYPE = /^audio\/[a-z0-9][a-z0-9.+-]*$/i;

const route = op({
  method: 'put',
  path: '/meetings/{id}/audio',
  operationId: 'uploadMeetingAudio',
  tags: ['audio'],
  summary: "Upload an upload meeting's audio file (raw body, streamed to storage)",
  description:
    'Only for meetings of source_type `upload` (others: 409). The body is the file itself with `Content-Type: audio/*` (415 otherwise), ' +
    'at most RECORDING_MAX_UPLOAD_BYTES (413; a larger Content-Length is refused before reading). Replaces an earlier upload. ' +
    'Broadcasts EntityChanged { entity: meeting_audio_file }.',
  auth: ['bearer'],
  request: { params: IdParam, body: { required: true, content: binaryContent(['audio/*']) } },
  responses: {
    201: jsonResponse(AudioFileSchema, 'stored (the meeting had no audio)'),
    200: jsonResponse(AudioFileSchema, 'stored, replacing the earlier audio'),
    404: notFoundResponse('meeting'),
    409: problemResponse('the meeting is not of source_type upload'),
    415: problemResponse('Content-Type is not audio/*'),
    503: problemResponse('object storage is unavailable; nothing was changed, retry after `Retry-After` seconds'),
  },
});

export function registerUploadAudio(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, store, config } = c.var.deps;
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    const contentType = (c.req.header('content-type') ?? '').split(';')[0].trim();
    if (!AUDIO_TYPE.test(contentType)) throw new DomainError('unsupported_media_type', 'Content-Type must be audio/*');
    const maxBytes = config.RECORDING_MAX_UPLOAD_BYTES;
    assertDeclaredLength(c.req.header('content-length'), maxBytes);
    const meeting = await getMeeting(db, { userId }, id);
    if (!meeting) throw notFound('meeting');
    if (meeting.source_type !== 'upload')
      throw new DomainError(
        'invalid_state',
        `audio can only be uploaded to a meeting of source_type upload (this one is ${meeting.source_type})`,
      );
    const body = c.req.raw.body;
    if (!body) throw unprocessable('the body is empty; send the audio file');

    const name = `uploads/${id}/${randomUUID()}`;
    let stored: StoredObject;
    try {
      stored = await store.write(name, Readable.fromWeb(body as WebReadableStream), {
        contentType,
        maxBytes,
        createOnly: true,
      });
    } catch (err) {
      if (err instanceof ObjectTooLargeError)
        throw new DomainError('payload_too_large', `the audio exceeds ${maxBytes} bytes`);
      throw err;
    }
    const discard = () => store.delete(name).catch(() => undefined);
    if (stored.size === 0) {
      await discard();
      throw unprocessable('the body is empty; send the audio file');
    }

    let previous: string | null = null;
    try {
      const replaced = (path: string | null) => void (previous = path);
      // 200 or 201 as the committed transaction found the meeting: with a file or without one.
      const res = await commit(c, () => (previous ? 200 : 201), attachUploadedAudio, {
        meeting_id: id,
        storage_path: name,
        content_type: contentType,
        byte_count: stored.size,
        replaced,
      });
      if (previous && previous !== name) await store.delete(previous).catch(() => undefined);
      return res;
    } catch (err) {
      await discard();
      throw err;
    }
  });
}
