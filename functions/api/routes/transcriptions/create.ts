import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/domain/meetings';
import { createTranscription } from '@mi/lib/domain/transcriptions';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { TranscriptionSchema } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/meetings/{id}/transcriptions',
  operationId: 'createTranscription',
  tags: ['transcriptions'],
  summary: 'Create a transcription of a meeting (status pending)',
  description: 'Broadcasts EntityChanged { entity: transcription, action: created }.',
  auth: ['bearer', 'service'],
  idempotent: true,
  request: { params: IdParam },
  responses: { 201: jsonResponse(TranscriptionSchema, 'the created transcription'), 404: notFoundResponse('meeting') },
});

export function registerCreateTranscription(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 201, async (tx, emit) => {
      const meeting = await getMeeting(tx, actorOf(c), id, { forUpdate: true });
      if (!meeting) throw notFound('meeting');
      const t = await createTranscription(tx, meeting.id);
      emit(meeting.user_id, changed('transcription', 'created', t.id, meeting.id));
      return t;
    });
  });
}
