import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerAssignSpeakerLabel } from './assign';
import { registerListSpeakerLabels } from './list';
import { registerUnassignSpeakerLabel } from './unassign';

export function registerSpeakerLabels(app: OpenAPIHono<AppEnv>) {
  registerListSpeakerLabels(app);
  registerAssignSpeakerLabel(app);
  registerUnassignSpeakerLabel(app);
}
