import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { listAttendees } from '@mi/lib/repositories/attendees';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { PersonBriefSchema } from '../people/schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/attendees',
  operationId: 'listMeetingAttendees',
  tags: ['meetings'],
  summary: "The meeting's attendees (people, by display_name)",
  description: "Lists the people attending one of the caller's meetings, ordered by display_name.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(PersonBriefSchema, 'AttendeePage'), 'a page of attendees'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListAttendees(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId: userIdOf(c) }, id))) throw notFound('meeting');
    const result = await listAttendees(db, id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
