import type { OpenAPIHono } from '@hono/zod-openapi';
import { requestExport } from '@mi/lib/use-cases/account-exports';
import type { UseCase } from '@mi/lib/use-cases/use-case';
import type { Context } from 'hono';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonResponse, op, problemResponse, z } from '../../openapi';
import { CreatedExportSchema } from './schema';

const route = op({
  method: 'post',
  path: '/me/exports',
  operationId: 'createAccountExport',
  tags: ['exports'],
  summary: 'Request an export of the whole account (one ZIP archive)',
  description:
    'Records a pending export and answers at once; the archive is built off the request (docs/exports.md): `manifest.json` with the ' +
    'sha256 of every file, the JSON of every record, each transcript as JSON and WebVTT, the audio of every take (live takes as WAV) ' +
    'and upload. Poll `GET /me/exports/{id}` (`Location`) or listen for EntityChanged `account_export`. One unfinished export per ' +
    'user: another is 409 invalid_state. Requires an Idempotency-Key.',
  auth: ['bearer'],
  idempotent: true,
  responses: {
    202: {
      ...jsonResponse(CreatedExportSchema, 'the export, pending'),
      headers: z.object({ location: z.string().openapi({ description: '/me/exports/{id}' }) }),
    },
    409: problemResponse(
      'invalid_state: an export of the account is already pending or running; or an Idempotency-Key in progress',
    ),
  },
});

/** The use case, with the answer's Location set before the idempotency record keeps the headers. */
const withLocation =
  (c: Context<AppEnv>): UseCase<void, Awaited<ReturnType<typeof requestExport>>> =>
  async (ctx, input) => {
    const created = await requestExport(ctx, input);
    c.header('Location', `/me/exports/${created.id}`);
    return created;
  };

export function registerCreateExport(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => commit(c, 202, withLocation(c), undefined));
}
