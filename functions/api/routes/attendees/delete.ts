import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound, unprocessable } from '@mi/lib/errors';
import { removeAttendee } from '@mi/lib/domain/attendees';
import { getMeeting } from '@mi/lib/domain/meetings';
import { ownsPerson } from '@mi/lib/domain/people';
import { userIdOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { notFoundResponse, op } from '../../openapi';
import { AttendeeParams } from './schema';
import { changed } from '@mi/lib/event-catalogue';

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
    const userId = userIdOf(c);
    const { id, personId } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      if (!(await getMeeting(tx, { userId }, id))) throw notFound('meeting');
      if (!(await ownsPerson(tx, userId, personId))) throw unprocessable('person does not exist', [{ path: 'personId', message: 'person does not exist' }]);
      if (await removeAttendee(tx, id, personId)) {
        emit(userId, changed('meeting_attendee', 'deleted', personId, id));
      }
    });
  });
}
