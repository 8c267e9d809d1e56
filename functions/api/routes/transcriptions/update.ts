import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateTranscription } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, problemResponse } from '../../openapi';
import { PatchTranscriptionBody, TranscriptionSchema } from './schema';

const route = op({
  method: 'patch',
  path: '/transcriptions/{id}',
  operationId: 'updateTranscription',
  tags: ['transcriptions'],
  summary: 'Update status, status_message or is_degraded (the status machine applies)',
  description:
    'Every status change appends a status-history row. Broadcasts EntityChanged { entity: transcription, action: updated }.',
  auth: ['service'],
  request: { params: IdParam, ...jsonBody(PatchTranscriptionBody) },
  responses: {
    200: jsonResponse(TranscriptionSchema, 'the transcription'),
    404: notFoundResponse('transcription'),
    409: problemResponse('the status machine does not allow this transition'),
  },
});

export function registerUpdateTranscription(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updateTranscription, { id, patch });
  });
}
