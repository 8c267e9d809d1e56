import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { Readable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { DomainError } from '@mi/lib/errors';
import { uploadMeetingAudio } from '@mi/lib/use-cases/audio';
import { perform } from '../../commit';
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
    'Each upload starts a transcription (pending, then transcribing) and offers it to the ML batch pass (`recording.finalized`, ' +
    'source `upload`, docs/ml-integration.md); while a transcription of the meeting is pending, transcribing or synthesizing, ' +
    'another upload is refused (409). Broadcasts EntityChanged { entity: meeting_audio_file } and { entity: transcription }.',
  auth: ['bearer'],
  request: { params: IdParam, body: { required: true, content: binaryContent(['audio/*']) } },
  responses: {
    201: jsonResponse(AudioFileSchema, 'stored (the meeting had no audio)'),
    200: jsonResponse(AudioFileSchema, 'stored, replacing the earlier audio'),
    404: notFoundResponse('meeting'),
    409: problemResponse('the meeting is not of source_type upload, or its audio is being transcribed'),
    415: problemResponse('Content-Type is not audio/*'),
    503: problemResponse(
      'object storage is unavailable (nothing was changed), or the batch pass could not be offered (the file is stored, its transcription failed); retry after `Retry-After` seconds',
    ),
  },
});

export function registerUploadAudio(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { config } = c.var.deps;
    const { id } = c.req.valid('param');
    const contentType = (c.req.header('content-type') ?? '').split(';')[0].trim();
    if (!AUDIO_TYPE.test(contentType)) throw new DomainError('unsupported_format', 'Content-Type must be audio/*');
    const maxBytes = config.RECORDING_MAX_UPLOAD_BYTES;
    assertDeclaredLength(c.req.header('content-length'), maxBytes);
    const body = c.req.raw.body && Readable.fromWeb(c.req.raw.body as WebReadableStream);
    const input = { meetingId: id, contentType, maxBytes, body };
    // 201 when the meeting had no audio, 200 when the upload replaced it.
    const { created, result } = await perform(c, uploadMeetingAudio, input);
    return c.json(result, created ? 201 : 200);
  });
}
