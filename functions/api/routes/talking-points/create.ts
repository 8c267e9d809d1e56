import type { OpenAPIHono } from '@hono/zod-openapi';
import { createTalkingPoint } from '@mi/lib/use-cases/talking-points';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateTalkingPointBody, TalkingPointSchema } from './schema';

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
    return commit(c, 201, createTalkingPoint, { meetingId: id, body });
  });
}
