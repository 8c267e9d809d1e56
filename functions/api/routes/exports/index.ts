import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateExport } from './create';
import { registerGetExport } from './get';
import { registerListExports } from './list';

/** Account export (decisions.md section 8, docs/exports.md). */
export function registerExports(app: OpenAPIHono<AppEnv>) {
  registerListExports(app);
  registerCreateExport(app);
  registerGetExport(app);
}
