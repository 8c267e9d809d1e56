import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateTalkingPoint } from './create';
import { registerDeleteTalkingPoint } from './delete';
import { registerListTalkingPoints } from './list';

export function registerTalkingPoints(app: OpenAPIHono<AppEnv>) {
  registerCreateTalkingPoint(app);
  registerListTalkingPoints(app);
  registerDeleteTalkingPoint(app);
}
