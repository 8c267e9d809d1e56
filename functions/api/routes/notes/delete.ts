import type { OpenAPIHono } from '@hono/zod-openapi';
import { deleteNote } from '@mi/lib/use-cases/notes';
import { commit } from '../../commit';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';

const route = op({
  method: 'delete',
  path: '/notes/{id}',
  operationId: 'deleteNote',
  tags: ['notes'],
  summary: 'Delete a note (hard delete; notes have no deleted_at)',
  description: 'Broadcasts EntityChanged { entity: note, action: deleted }.',
  conditional: true,
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('note') },
});

export function registerDeleteNote(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, deleteNote, { id, precondition: ifMatch(c) });
  });
}
