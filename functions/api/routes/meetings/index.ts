import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateMeeting } from './create';
import { registerDeleteMeeting } from './delete';
import { registerGetMeeting } from './get';
import { registerListMeetings } from './list';
import { registerUpdateMeeting } from './update';

export function registerMeetings(app: OpenAPIHono<AppEnv>) {
  registerListMeetings(app);
  registerCreateMeeting(app);
  registerGetMeeting(app);
  registerUpdateMeeting(app);
  registerDeleteMeeting(app);
}
