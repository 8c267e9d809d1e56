import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerListRecordingEvents } from './events';
import { registerUploadRecordingGap } from './gap-upload';
import { registerGetRecording } from './get';
import { registerListRecordingTakes } from './takes';

export function registerRecording(app: OpenAPIHono<AppEnv>) {
  registerGetRecording(app);
  registerListRecordingEvents(app);
  registerListRecordingTakes(app);
  registerUploadRecordingGap(app);
}
