import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateNote } from '@mi/lib/use-cases/notes';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { NoteSchema, PatchNoteBody } from './schema';

const route = op({
  method: 'patch',
  path: '/notes/{id}',
  operationId: 'updateNote',
  tags: ['notes'],
  summary: 'Partially update a note',
  description:
    'subject_type and subject_id change together (both null detaches the note). Broadcasts EntityChanged { entity: note, action: updated }.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam, ...jsonBody(PatchNoteBody) },
  responses: { 200: withEtag(jsonResponse(NoteSchema, 'the full note')), 404: notFoundResponse('note') },
});

export function registerUpdateNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, updateNote, { id, patch, precondition: ifMatch(c) }, { etag: true });
  });
}
