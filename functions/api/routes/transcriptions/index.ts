import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateTranscription } from './create';
import { registerExportTranscription } from './export';
import { registerGetSegment } from './segment-get';
import { registerUpdateSegment } from './segment-update';
import { registerGetTranscription } from './get';
import { registerTranscriptionHistory } from './history';
import { registerListTranscriptions } from './list';
import { registerAppendSegments } from './segments-append';
import { registerListSegments } from './segments-list';
import { registerReplaceSegments } from './segments-replace';
import { registerUpdateTranscription } from './update';

export function registerTranscriptions(app: OpenAPIHono<AppEnv>) {
  registerCreateTranscription(app);
  registerListTranscriptions(app);
  registerGetTranscription(app);
  registerUpdateTranscription(app);
  registerTranscriptionHistory(app);
  registerAppendSegments(app);
  registerReplaceSegments(app);
  registerListSegments(app);
  registerExportTranscription(app);
  registerGetSegment(app);
  registerUpdateSegment(app);
}
