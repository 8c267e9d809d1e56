import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { SERVICE } from '@mi/lib/domain/actor';
import { getMeeting } from '@mi/lib/domain/meetings';
import { createTalkingPoint } from '@mi/lib/domain/talking-points';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateTalkingPointBody, TalkingPointSchema } from './schema';
import { talkingPointEvent } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/meetings/{id}/talking-points',
  operationId: 'createTalkingPoint',
  tags: ['talking-points'],
  summary: 'Deliver a live talking point (ML service)',
  description: 'Broadcasts TalkingPointEvent { meeting_id, talking_point } to the meeting owner.',
  auth: ['service'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(CreateTalkingPointBody) },
  responses: { 201: jsonResponse(TalkingPointSchema, 'the full talking point'), 404: notFoundResponse('meeting') },
});

export function registerCreateTalkingPoint(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const meeting = await getMeeting(tx, SERVICE, id);
      if (!meeting) throw notFound('meeting');
      const tp = await createTalkingPoint(tx, meeting.id, body);
      emit(meeting.user_id, talkingPointEvent(meeting.id, { ...tp }));
      return tp;
    });
  });
}
