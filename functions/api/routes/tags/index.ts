import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateTag } from './create';
import { registerDeleteTag } from './delete';
import { registerGetTag } from './get';
import { registerListTags } from './list';
import { registerUpdateTag } from './update';

export function registerTags(app: OpenAPIHono<AppEnv>) {
  registerListTags(app);
  registerCreateTag(app);
  registerGetTag(app);
  registerUpdateTag(app);
  registerDeleteTag(app);
}
