import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getPerson } from '@mi/lib/repositories/people';
import { listVoiceSamples } from '@mi/lib/repositories/voice-samples';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { VoiceSampleSchema } from './schema';

const route = op({
  method: 'get',
  path: '/people/{id}/voice-samples',
  operationId: 'listVoiceSamples',
  tags: ['people'],
  summary: "The voice samples that shape the person's voice_vector, newest first",
  description: [
    'One item per transcript segment attributed to the person (by a speaker-label assignment, a stored',
    'assignment re-applied to new segments, or the ML service) that has a non-zero feature_vector.',
    'voice_vector is the L2-normalised sum of these L2-normalised embeddings. A sample goes when its',
    'segment is unassigned, reassigned (it moves to the other person) or removed by a batch replace, and',
    'with its meeting when the meeting is purged. Paginated by limit and cursor.',
  ].join(' '),
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(VoiceSampleSchema, 'VoiceSamplePage'), 'a page of samples'),
    404: notFoundResponse('person'),
  },
});

export function registerListVoiceSamples(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    if (!(await getPerson(db, { userId: userIdOf(c) }, id))) throw notFound('person');
    const result = await listVoiceSamples(db, id, c.req.valid('query'));
    return c.json(result, 200);
  });
}
