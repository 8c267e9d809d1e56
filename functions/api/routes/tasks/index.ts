import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerListTaskChildren } from './children';
import { registerCreateTask } from './create';
import { registerDeleteTask } from './delete';
import { registerGetTask } from './get';
import { registerListTasks } from './list';
import { registerUpdateTask } from './update';

export function registerTasks(app: OpenAPIHono<AppEnv>) {
  registerListTasks(app);
  registerCreateTask(app);
  registerGetTask(app);
  registerListTaskChildren(app);
  registerUpdateTask(app);
  registerDeleteTask(app);
}
