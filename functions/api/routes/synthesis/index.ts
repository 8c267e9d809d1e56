import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerReplaceSynthesis } from './replace';

export function registerSynthesis(app: OpenAPIHono<AppEnv>) {
  registerReplaceSynthesis(app);
}
