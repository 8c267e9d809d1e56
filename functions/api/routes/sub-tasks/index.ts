import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateSubTask } from './create';
import { registerDeleteSubTask } from './delete';
import { registerGetSubTask } from './get';
import { registerListSubTasks } from './list';
import { registerUpdateSubTask } from './update';

export function registerSubTasks(app: OpenAPIHono<AppEnv>) {
  registerListSubTasks(app);
  registerCreateSubTask(app);
  registerGetSubTask(app);
  registerUpdateSubTask(app);
  registerDeleteSubTask(app);
}
