import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateSystemTasks } from './create';
import { registerDeleteSystemTasks } from './delete';

export function registerSystemTasks(app: OpenAPIHono<AppEnv>) {
  registerCreateSystemTasks(app);
  registerDeleteSystemTasks(app);
}
