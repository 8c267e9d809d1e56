import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listLabelAssignments } from '@mi/lib/repositories/speaker-label-assignments';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, z } from '../../openapi';
import { LabelAssignmentSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/speaker-labels',
  operationId: 'listSpeakerLabels',
  tags: ['meetings'],
  summary: "The meeting's speaker-label assignments, by label",
  description: 'Lists the meeting\'s speaker-label assignments (label → person), ordered by label.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: {
    200: jsonResponse(z.object({ items: z.array(LabelAssignmentSchema) }).openapi('SpeakerLabelAssignments'), 'the assignments'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListSpeakerLabels(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId: userIdOf(c) }, id))) throw notFound('meeting');
    const items = await listLabelAssignments(db, id);
    return c.json({ items }, 200);
  });
}
