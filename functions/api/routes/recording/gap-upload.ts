import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound, unprocessable } from '@mi/lib/errors';
import { assertGapUploadPossible } from '@mi/lib/repositories/gap-recovery';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { getRecording, pcmFrameBytes, type Recording } from '@mi/lib/repositories/recordings';
import { uploadGap } from '@mi/lib/use-cases/recording';
import { userIdOf } from '../../actor';
import { perform } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, op, problemResponse, z } from '../../openapi';
import { assertDeclaredLength, readBounded } from './body';
import { assertDigests, parseContentDigest } from './digest';
import { AudioVersionQuery, GapUploadResultSchema } from './schema';

const route = op({
  method: 'put',
  path: '/meetings/{id}/recording/audio/{range}',
  operationId: 'uploadRecordingGap',
  tags: ['recording'],
  summary: 'Upload missing frames of a stopped take (gap recovery)',
  description:
    'The body is the raw bytes of frames start_sequence..end_sequence (inclusive), in order, without the 8-byte sequence headers. ' +
    "Until the take's gap_upload_deadline; after it: 410. While capture is still open (recording/stopping) the frames belong on the " +
    'WebSocket: 409. A new range is stored (201) while the take is `stopped`; once it is finalizing/finalized (its missing ranges were ' +
    'all filled) a new range is 410, the problem detail saying which (finalized, or the deadline passed). ' +
    'The identical range with the same bytes answers 200 whatever the state (stopped, finalizing, finalized): a retry whose first ' +
    'answer was lost is never refused; a range overlapping stored frames otherwise is 409 (docs/retries.md). ' +
    'Optional `Content-Digest: sha-256=:<base64>:` (RFC 9530) is checked (422 on mismatch). ' +
    'An upload that would leave the take more than 64 missing ranges (past the highest frame with a gap, or splitting a missing range) is 422 ' +
    '`too_many_gaps` and stores nothing; uploading in sequence order never meets it. ' +
    "The range must end below the take's ceiling, max_duration_seconds × 10 frames (422 sequence_out_of_range). A pcm_s16le body is exactly " +
    '(end − start + 1) × sample_rate / 10 × 2 bytes, a webm_opus body at least a byte per frame (422 otherwise). ' +
    `Bodies above RECORDING_MAX_CHUNK_BYTES are refused with 413.`,
  auth: ['bearer'],
  request: {
    params: IdParam.extend({
      range: z
        .string()
        .regex(/^\d{1,15}-\d{1,15}$/, 'must be {start_sequence}-{end_sequence}')
        .openapi({
          param: { name: 'range', in: 'path' },
          example: '120-134',
          description: '{start_sequence}-{end_sequence}, inclusive',
        }),
    }),
    query: z.object({ audio_version: AudioVersionQuery.openapi({ description: 'the take' }) }),
    headers: z.object({
      'content-digest': z.string().max(1000).optional().openapi({ description: 'RFC 9530, e.g. sha-256=:<base64>:' }),
    }),
    body: {
      required: true,
      content: { 'application/octet-stream': { schema: z.string().openapi({ type: 'string', format: 'binary' }) } },
    },
  },
  responses: {
    201: jsonResponse(GapUploadResultSchema, 'stored'),
    200: jsonResponse(
      GapUploadResultSchema,
      "the identical range was already stored (whatever the take's state, until the deadline)",
    ),
    404: problemResponse('meeting or audio_version not found'),
    409: problemResponse('capture still open, or the range overlaps stored frames with other bytes'),
    410: problemResponse('the gap upload deadline passed, or a new range for a take that is finalizing/finalized'),
    503: problemResponse('object storage is unavailable; nothing was changed, retry after `Retry-After` seconds'),
  },
});

export function registerUploadRecordingGap(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, config } = c.var.deps;
    const { id, range } = c.req.valid('param');
    const { audio_version } = c.req.valid('query');
    const [start, end] = range.split('-').map(Number);
    if (end < start)
      throw unprocessable('end_sequence must not be below start_sequence', [{ path: 'range', message: 'end < start' }]);
    const maxBytes = config.RECORDING_MAX_CHUNK_BYTES;
    assertDeclaredLength(c.req.header('content-length'), maxBytes);
    const digests = parseContentDigest(c.req.header('content-digest'));

    // Cheap refusals before the body is read.
    const meeting = await getMeeting(db, { userId: userIdOf(c) }, id);
    if (!meeting) throw notFound('meeting');
    const rec = await getRecording(db, id, audio_version);
    if (!rec) throw notFound(`recording audio_version ${audio_version}`);
    await assertGapUploadPossible(db, rec, { start, end });
    assertRangeFits(rec, start, end, c.req.header('content-length'));

    const bytes = await readBounded(c.req.raw.body, maxBytes);
    assertFrameBytes(rec, start, end, bytes.length);
    assertDigests(digests, bytes);

    const up = { meetingId: id, audioVersion: audio_version, start, end, bytes };
    const { created, result } = await perform(c, uploadGap, up);
    return c.json(result, created ? 201 : 200);
  });
}

/** Nothing at or past the take's ceiling (max_duration_seconds × 10 frames) is ever stored. */
function assertRangeFits(rec: Recording, start: number, end: number, declaredLength: string | undefined): void {
  const ceiling = rec.max_duration_seconds * 10;
  if (end >= ceiling) {
    throw unprocessable(
      `sequence_out_of_range: the take holds sequences 0-${ceiling - 1} (max_duration_seconds × 10)`,
      [{ path: 'range', message: `must end below ${ceiling}` }],
    );
  }
  if (declaredLength !== undefined) assertFrameBytes(rec, start, end, Number(declaredLength));
}

/**
 * pcm_s16le frames are exactly sample_rate / 10 samples of 2 bytes, so a range's body has one
 * size; webm_opus frames are at least a byte each (decisions.md section 6).
 */
function assertFrameBytes(rec: Recording, start: number, end: number, length: number): void {
  const frames = end - start + 1;
  if (rec.encoding === 'pcm_s16le') {
    const expected = frames * pcmFrameBytes(rec.sample_rate);
    if (length !== expected) {
      throw unprocessable(
        `the body must be ${expected} bytes: ${frames} frame(s) of ${pcmFrameBytes(rec.sample_rate)} bytes (pcm_s16le at ${rec.sample_rate} Hz)`,
        [{ path: 'body', message: `must be ${expected} bytes` }],
      );
    }
  } else if (length < frames) {
    throw unprocessable(`the body must hold at least a byte per frame (${frames})`, [
      { path: 'body', message: `must be at least ${frames} bytes` },
    ]);
  }
}
