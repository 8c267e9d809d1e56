import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerAudioProxy } from './proxy';
import { registerUploadAudio } from './upload';
import { registerAudioUrl } from './url';

export function registerAudio(app: OpenAPIHono<AppEnv>) {
  registerUploadAudio(app);
  registerAudioUrl(app);
  registerAudioProxy(app);
}
