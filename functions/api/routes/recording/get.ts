import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { coverage } from '@mi/lib/repositories/manifest';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { getRecording } from '@mi/lib/repositories/recordings';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, z } from '../../openapi';
import { AudioVersionQuery, RecordingSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/recording',
  operationId: 'getRecording',
  tags: ['recording'],
  summary: "A live recording take's state and stored coverage (the latest take unless audio_version is given)",
  description:
    "Returns a take's state, stop reason, gap upload deadline and stored coverage (highest_contiguous_sequence, missing_ranges, frames and bytes stored): the latest take unless audio_version is given.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object({ audio_version: AudioVersionQuery.optional() }) },
  responses: { 200: jsonResponse(RecordingSchema, 'the take'), 404: notFoundResponse('meeting or recording') },
});

export function registerGetRecording(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId: userIdOf(c) }, id))) throw notFound('meeting');
    const rec = await getRecording(db, id, c.req.valid('query').audio_version);
    if (!rec) throw notFound('recording');
    const cov = await coverage(db, id, rec.audio_version);
    return c.json(
      JSON.parse(
        JSON.stringify({
          meeting_id: rec.meeting_id,
          audio_version: rec.audio_version,
          state: rec.state,
          transcription_id: rec.transcription_id,
          encoding: rec.encoding,
          sample_rate: rec.sample_rate,
          highest_contiguous_sequence: cov.highest_contiguous_sequence,
          missing_ranges: cov.missing_ranges,
          frames_stored: cov.frames_stored,
          bytes_stored: cov.bytes_stored,
          started_at: rec.started_at,
          stopped_at: rec.stopped_at,
          stop_reason: rec.stop_reason,
          gap_upload_deadline: rec.gap_upload_deadline,
          finalized_at: rec.finalized_at,
        }),
      ),
      200,
    );
  });
}
