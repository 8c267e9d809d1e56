import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { deleteNote, meetingOf } from '@mi/lib/domain/notes';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/notes/{id}',
  operationId: 'deleteNote',
  tags: ['notes'],
  summary: 'Delete a note (hard delete; notes have no deleted_at)',
  description: 'Broadcasts EntityChanged { entity: note, action: deleted }.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('note') },
});

export function registerDeleteNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const note = await deleteNote(tx, actorOf(c), id);
      if (!note) throw notFound('note');
      emit(note.user_id, changed('note', 'deleted', id, meetingOf(note.subject_type, note.subject_id)));
    });
  });
}
