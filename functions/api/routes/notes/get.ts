import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getNote } from '@mi/lib/repositories/notes';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { setEtag } from '../../etag';
import { IdParam, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { NoteSchema } from './schema';

const route = op({
  method: 'get',
  path: '/notes/{id}',
  operationId: 'getNote',
  tags: ['notes'],
  summary: 'Get a note',
  description: 'Returns one note of the caller with an ETag for a later conditional PATCH.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: withEtag(jsonResponse(NoteSchema, 'the note')), 404: notFoundResponse('note') },
});

export function registerGetNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const note = await getNote(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!note) throw notFound('note');
    setEtag(c, note);
    return c.json(note, 200);
  });
}
