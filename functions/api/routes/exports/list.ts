import type { OpenAPIHono } from '@hono/zod-openapi';
import { listExports } from '@mi/lib/repositories/account-exports';
import { exportView } from '@mi/lib/use-cases/account-exports';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, z } from '../../openapi';
import { AccountExportSchema } from './schema';

const route = op({
  method: 'get',
  path: '/me/exports',
  operationId: 'listAccountExports',
  tags: ['exports'],
  summary: "List the caller's account exports, newest first",
  description: 'Each export as `GET /me/exports/{id}` gives it (ready ones with a fresh signed link).',
  auth: ['bearer'],
  request: { query: z.object(PageQuery) },
  responses: { 200: jsonResponse(page(AccountExportSchema, 'AccountExportPage'), 'a page of exports') },
});

export function registerListExports(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, store, config } = c.var.deps;
    const found = await listExports(db, userIdOf(c), c.req.valid('query'));
    const items = await Promise.all(found.items.map((e) => exportView(store, config, e)));
    return c.json({ items, next_cursor: found.next_cursor }, 200);
  });
}
