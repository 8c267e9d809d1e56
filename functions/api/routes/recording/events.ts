import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listRecordingEvents } from '@mi/lib/repositories/recording-history';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { RecordingEventSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/recording/events',
  operationId: 'listRecordingEvents',
  tags: ['recording'],
  summary:
    "The meeting's recording event history (lifecycle, health, reconnect/resume, stop, gap uploads, finalize), newest first",
  description:
    "Pages through the meeting's recording history, newest first: lifecycle, health, reconnects and resumes, stops, gap uploads and finalizing.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(RecordingEventSchema, 'RecordingEventPage'), 'a page of events'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListRecordingEvents(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId: userIdOf(c) }, id))) throw notFound('meeting');
    const result = await listRecordingEvents(db, id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
