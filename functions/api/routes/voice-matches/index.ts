import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerFindVoiceMatches } from './find';

export function registerVoiceMatches(app: OpenAPIHono<AppEnv>) {
  registerFindVoiceMatches(app);
}
