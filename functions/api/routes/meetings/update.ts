import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting, updateMeeting } from '@mi/lib/domain/meetings';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { assertIfMatch, setEtag } from '../../etag';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { MeetingSchema, PatchMeetingBody } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'patch',
  path: '/meetings/{id}',
  operationId: 'updateMeeting',
  tags: ['meetings'],
  summary: 'Partially update meeting metadata (the ML service sets headline)',
  description: 'Broadcasts EntityChanged { entity: meeting, action: updated }.',
  conditional: true,
  auth: ['bearer', 'service'],
  request: { params: IdParam, ...jsonBody(PatchMeetingBody) },
  responses: { 200: withEtag(jsonResponse(MeetingSchema, 'the full meeting')), 404: notFoundResponse('meeting') },
});

export function registerUpdateMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    return commit(c, 200, async (tx, emit) => {
      await assertIfMatch(c, () => getMeeting(tx, actorOf(c), id, { forUpdate: true }));
      const meeting = await updateMeeting(tx, actorOf(c), id, patch);
      if (!meeting) throw notFound('meeting');
      emit(meeting.user_id, changed('meeting', 'updated', meeting.id, meeting.id));
      setEtag(c, meeting);
      return meeting;
    });
  });
}
