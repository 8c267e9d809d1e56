import type { OpenAPIHono } from '@hono/zod-openapi';
import { listMeetings } from '@mi/lib/repositories/meetings';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, page, PageQuery, Timestamp, z } from '../../openapi';
import { MeetingSchema, SourceType } from './schema';

const route = op({
  method: 'get',
  path: '/meetings',
  operationId: 'listMeetings',
  tags: ['meetings'],
  summary: "List the caller's meetings, newest start_time first",
  description:
    "Pages through the caller's meetings (soft-deleted ones excluded), newest start_time first, optionally filtered by source_type, a start_time window and a case-insensitive title match.",
  auth: ['bearer'],
  request: {
    query: z.object({
      ...PageQuery,
      source_type: SourceType.optional(),
      from: Timestamp.optional().openapi({ description: 'start_time at or after' }),
      to: Timestamp.optional().openapi({ description: 'start_time before' }),
      q: z.string().min(1).max(200).optional().openapi({ description: 'title contains (case-insensitive)' }),
    }),
  },
  responses: { 200: jsonResponse(page(MeetingSchema, 'MeetingPage'), 'a page of meetings') },
});

export function registerListMeetings(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await listMeetings(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
