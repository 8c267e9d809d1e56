import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { setEtag } from '../../etag';
import { IdParam, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { MeetingSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}',
  operationId: 'getMeeting',
  tags: ['meetings'],
  summary: 'Get a meeting',
  description:
    "Returns one meeting of the caller (any meeting for the service) with an ETag for a later conditional PATCH. Soft-deleted and other users' meetings answer 404.",
  auth: ['bearer', 'service'],
  request: { params: IdParam },
  responses: { 200: withEtag(jsonResponse(MeetingSchema, 'the meeting')), 404: notFoundResponse('meeting') },
});

export function registerGetMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const meeting = await getMeeting(c.var.deps.db, actorOf(c), c.req.valid('param').id);
    if (!meeting) throw notFound('meeting');
    setEtag(c, meeting);
    return c.json(meeting, 200);
  });
}
