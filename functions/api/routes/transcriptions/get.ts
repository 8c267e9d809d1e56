import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getTranscription } from '@mi/lib/repositories/transcriptions';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { TranscriptionSchema } from './schema';

const route = op({
  method: 'get',
  path: '/transcriptions/{id}',
  operationId: 'getTranscription',
  tags: ['transcriptions'],
  summary: 'Get a transcription',
  description: 'Returns one transcription of a meeting of the caller (any for the service), with its status.',
  auth: ['bearer', 'service'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(TranscriptionSchema, 'the transcription'), 404: notFoundResponse('transcription') },
});

export function registerGetTranscription(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const found = await getTranscription(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!found) throw notFound('transcription');
    const { user_id: _owner, ...t } = found;
    return c.json(t, 200);
  });
}
