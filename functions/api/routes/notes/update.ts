import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getNote, meetingOf, updateNote } from '@mi/lib/domain/notes';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { assertIfMatch, setEtag } from '../../etag';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { NoteSchema, PatchNoteBody } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'patch',
  path: '/notes/{id}',
  operationId: 'updateNote',
  tags: ['notes'],
  summary: 'Partially update a note',
  description: 'subject_type and subject_id change together (both null detaches the note). Broadcasts EntityChanged { entity: note, action: updated }.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchNoteBody) },
  responses: { 200: withEtag(jsonResponse(NoteSchema, 'the full note')), 404: notFoundResponse('note') },
});

export function registerUpdateNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      await assertIfMatch(c, () => getNote(tx, actorOf(c), id, { forUpdate: true }));
      const note = await updateNote(tx, actorOf(c), id, patch);
      if (!note) throw notFound('note');
      emit(note.user_id, changed('note', 'updated', id, meetingOf(note.subject_type, note.subject_id)));
      setEtag(c, note);
      return note;
    });
  });
}
