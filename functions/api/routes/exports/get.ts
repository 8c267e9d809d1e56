import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getExport } from '@mi/lib/repositories/account-exports';
import { exportView } from '@mi/lib/use-cases/account-exports';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { AccountExportSchema } from './schema';

const route = op({
  method: 'get',
  path: '/me/exports/{id}',
  operationId: 'getAccountExport',
  tags: ['exports'],
  summary: 'An account export: its state, and while ready a signed link to the archive',
  description:
    'While `ready`, `url` is a fresh signed link to the ZIP valid ACCOUNT_EXPORT_URL_TTL_SECONDS (`url_expires_at`); ' +
    'archives are kept ACCOUNT_EXPORT_RETENTION_HOURS after they are ready, then deleted with the export (404).',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: { 200: jsonResponse(AccountExportSchema, 'the export'), 404: notFoundResponse('export') },
});

export function registerGetExport(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, store, config } = c.var.deps;
    const found = await getExport(db, userIdOf(c), c.req.valid('param').id);
    if (!found) throw notFound('export');
    return c.json(await exportView(store, config, found), 200);
  });
}
