import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerRemoveAttendee } from './delete';
import { registerListAttendees } from './list';
import { registerAddAttendee } from './put';

export function registerAttendees(app: OpenAPIHono<AppEnv>) {
  registerListAttendees(app);
  registerAddAttendee(app);
  registerRemoveAttendee(app);
}
