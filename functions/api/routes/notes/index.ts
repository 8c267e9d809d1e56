import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreateNote } from './create';
import { registerDeleteNote } from './delete';
import { registerGetNote } from './get';
import { registerListNotes } from './list';
import { registerUpdateNote } from './update';

export function registerNotes(app: OpenAPIHono<AppEnv>) {
  registerListNotes(app);
  registerCreateNote(app);
  registerGetNote(app);
  registerUpdateNote(app);
  registerDeleteNote(app);
}
