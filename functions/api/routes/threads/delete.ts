import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { meetingOf } from '@mi/lib/domain/notes';
import { softDeleteThread } from '@mi/lib/domain/threads';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/threads/{id}',
  operationId: 'deleteThread',
  tags: ['threads'],
  summary: 'Soft-delete an AI chat thread (its messages are hidden with it)',
  description: 'Broadcasts EntityChanged { entity: ai_thread, action: deleted }.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('thread') },
});

export function registerDeleteThread(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const thread = await softDeleteThread(tx, actorOf(c), id);
      if (!thread) throw notFound('thread');
      emit(thread.user_id, changed('ai_thread', 'deleted', id, meetingOf(thread.context_type, thread.context_id)));
    });
  });
}
