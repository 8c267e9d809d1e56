import type { OpenAPIHono } from '@hono/zod-openapi';
import { createMeeting } from '@mi/lib/domain/meetings';
import { userIdOf } from '../../actor';
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
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateMeetingBody),
  responses: { 201: jsonResponse(MeetingSchema, 'the created meeting') },
});

export function registerCreateMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const userId = userIdOf(c);
    const body = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const meeting = await createMeeting(tx, userId, body);
      await emit(userId, { type: 'EntityChanged', entity: 'meeting', action: 'created', id: meeting.id, meeting_id: meeting.id });
      return meeting;
    });
  });
}
