import type { OpenAPIHono } from '@hono/zod-openapi';
import { removeAttendee } from '@mi/lib/use-cases/meetings';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { notFoundResponse, op } from '../../openapi';
import { AttendeeParams } from './schema';

const route = op({
  method: 'delete',
  path: '/meetings/{id}/attendees/{personId}',
  operationId: 'removeMeetingAttendee',
  tags: ['meetings'],
  summary: 'Remove a person from the meeting attendees (idempotent)',
  description: '422 when personId is not one of your people.',
  auth: ['bearer'],
  request: { params: AttendeeParams },
  responses: { 204: { description: 'the person does not attend the meeting' }, 404: notFoundResponse('meeting') },
});

export function registerRemoveAttendee(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id, personId } = c.req.valid('param');
    return commit(c, 204, removeAttendee, { meetingId: id, personId });
  });
}
