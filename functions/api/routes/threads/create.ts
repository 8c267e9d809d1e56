import type { OpenAPIHono } from '@hono/zod-openapi';
import { meetingOf } from '@mi/lib/domain/notes';
import { createThread } from '@mi/lib/domain/threads';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { AiThreadSchema, CreateThreadBody } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/threads',
  operationId: 'createThread',
  tags: ['threads'],
  summary: 'Start an AI chat thread, optionally about a person or meeting',
  description: "The context must be the caller's person or meeting (else 422). Broadcasts EntityChanged { entity: ai_thread, action: created }.",
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateThreadBody),
  responses: { 201: jsonResponse(AiThreadSchema, 'the created thread') },
});

export function registerCreateThread(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const body = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const thread = await createThread(tx, userId, body);
      emit(userId, changed('ai_thread', 'created', thread.id, meetingOf(thread.context_type, thread.context_id)));
      return thread;
    });
  });
}
