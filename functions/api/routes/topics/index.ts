import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerListTopics } from './list';

export function registerTopics(app: OpenAPIHono<AppEnv>) {
  registerListTopics(app);
}
