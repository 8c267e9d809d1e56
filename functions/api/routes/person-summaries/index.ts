import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateSummary } from './create';
import { registerDeleteSummary } from './delete';
import { registerListSummaries } from './list';
import { registerUpdateSummary } from './update';

export function registerPersonSummaries(app: OpenAPIHono<AppEnv>) {
  registerListSummaries(app);
  registerCreateSummary(app);
  registerUpdateSummary(app);
  registerDeleteSummary(app);
}
