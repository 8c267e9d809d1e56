import type { OpenAPIHono } from '@hono/zod-openapi';
import { createNote } from '@mi/lib/use-cases/notes';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreateNoteBody, NoteSchema } from './schema';

const route = op({
  method: 'post',
  path: '/notes',
  operationId: 'createNote',
  tags: ['notes'],
  summary: 'Create a note, optionally about a person or meeting',
  description:
    "The subject must be the caller's person or meeting (else 422). Broadcasts EntityChanged { entity: note, action: created }.",
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateNoteBody),
  responses: { 201: jsonResponse(NoteSchema, 'the created note') },
});

export function registerCreateNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const body = c.req.valid('json');
    return commit(c, 201, createNote, body);
  });
}
