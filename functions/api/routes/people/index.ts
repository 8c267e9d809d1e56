import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../env';
import { registerCreatePerson } from './create';
import { registerDeletePerson } from './delete';
import { registerGetPerson } from './get';
import { registerListPeople } from './list';
import { registerSetMyPerson } from './me-person';
import { registerMergePerson } from './merge';
import { registerUpdatePerson } from './update';
import { registerListVoiceSamples } from './voice-samples';

export function registerPeople(app: OpenAPIHono<AppEnv>) {
  registerListPeople(app);
  registerCreatePerson(app);
  registerGetPerson(app);
  registerUpdatePerson(app);
  registerDeletePerson(app);
  registerSetMyPerson(app);
  registerMergePerson(app);
  registerListVoiceSamples(app);
}
