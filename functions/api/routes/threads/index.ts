import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateThread } from './create';
import { registerDeleteThread } from './delete';
import { registerGetThread } from './get';
import { registerListThreads } from './list';
import { registerMessages } from './messages';

export function registerThreads(app: OpenAPIHono<AppEnv>) {
  registerListThreads(app);
  registerCreateThread(app);
  registerGetThread(app);
  registerDeleteThread(app);
  registerMessages(app);
}
