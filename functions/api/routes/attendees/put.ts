import type { OpenAPIHono } from '@hono/zod-openapi';
import { addAttendee } from '@mi/lib/use-cases/meetings';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { notFoundResponse, op } from '../../openapi';
import { AttendeeParams } from './schema';

const route = op({
  method: 'put',
  path: '/meetings/{id}/attendees/{personId}',
  operationId: 'addMeetingAttendee',
  tags: ['meetings'],
  summary: 'Add a person to the meeting attendees (idempotent)',
  description: '422 when personId is not one of your people.',
  auth: ['bearer'],
  request: { params: AttendeeParams },
  responses: { 204: { description: 'the person attends the meeting' }, 404: notFoundResponse('meeting') },
});

export function registerAddAttendee(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id, personId } = c.req.valid('param');
    return commit(c, 204, addAttendee, { meetingId: id, personId });
  });
}
