import type { OpenAPIHono } from '@hono/zod-openapi';
import { createMeeting } from '@mi/lib/use-cases/meetings';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { CreateMeetingBody, MeetingSchema } from './schema';

const route = op({
  method: 'post',
  path: '/meetings',
  operationId: 'createMeeting',
  tags: ['meetings'],
  summary: 'Create a meeting',
  description:
    'Creates a meeting owned by the caller. Requires an Idempotency-Key; a retry with the same key and body replays the first answer byte for byte. Broadcasts EntityChanged meeting created.',
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateMeetingBody),
  responses: { 201: jsonResponse(MeetingSchema, 'the created meeting') },
});

export function registerCreateMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const body = c.req.valid('json');
    return commit(c, 201, createMeeting, body);
  });
}
