import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env';
import { registerMe } from './me';
import { registerMeetings } from './meetings';

/** Every resource's routes, registered on the one app. */
export function registerRoutes(app: OpenAPIHono<AppEnv>) {
  registerMe(app);
  registerMeetings(app);
}
