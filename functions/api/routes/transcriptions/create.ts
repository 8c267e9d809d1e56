import type { OpenAPIHono } from '@hono/zod-openapi';
import { createTranscription } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { TranscriptionSchema } from './schema';

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
    return commit(c, 201, createTranscription, { meetingId: id });
  });
}
