import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { listSpeakerLabels } from '@mi/lib/repositories/speaker-label-list';
import { voiceSearchSettings } from '@mi/lib/repositories/voice';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op, z } from '../../openapi';
import { SpeakerLabelSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/speaker-labels',
  operationId: 'listSpeakerLabels',
  tags: ['meetings'],
  summary: "The meeting's speaker labels, assigned or not, with suggestions",
  description: [
    "Every speaker label of the meeting's transcript segments, ordered by label, with the person assigned to it",
    '(person_id null when unassigned) and how many segments carry it. An unassigned label carries `suggestions`:',
    "up to 3 of your people whose voice_vector is closest to the label's voice (the mean of its segments'",
    'L2-normalised feature_vectors), at least VOICE_SUGGEST_MIN_SIMILARITY (default 0.5) similar, best first;',
    '[] when none qualifies or the label has no embeddings. The search is that of POST /people/voice-matches.',
  ].join(' '),
  auth: ['bearer'],
  request: { params: IdParam },
  responses: {
    200: jsonResponse(z.object({ items: z.array(SpeakerLabelSchema) }).openapi('SpeakerLabels'), 'the labels'),
    404: notFoundResponse('meeting'),
  },
});

export function registerListSpeakerLabels(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, config } = c.var.deps;
    const { id } = c.req.valid('param');
    const userId = userIdOf(c);
    if (!(await getMeeting(db, { userId }, id))) throw notFound('meeting');
    const settings = { ...voiceSearchSettings(config), minSimilarity: config.VOICE_SUGGEST_MIN_SIMILARITY };
    return c.json({ items: await listSpeakerLabels(db, userId, id, settings) }, 200);
  });
}
