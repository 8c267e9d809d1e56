import type { OpenAPIHono } from '@hono/zod-openapi';
import { listNotes } from '@mi/lib/repositories/notes';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, Uuid, z } from '../../openapi';
import { NoteSchema, SubjectType } from './schema';

const route = op({
  method: 'get',
  path: '/notes',
  operationId: 'listNotes',
  tags: ['notes'],
  summary: "List the caller's notes, newest first",
  description: "Pages through the caller's notes, newest first, optionally filtered by subject.",
  auth: ['bearer'],
  request: { query: z.object({ ...PageQuery, subject_type: SubjectType.optional(), subject_id: Uuid.optional() }) },
  responses: { 200: jsonResponse(page(NoteSchema, 'NotePage'), 'a page of notes') },
});

export function registerListNotes(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listNotes(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
