import type { OpenAPIHono } from '@hono/zod-openapi';
import { assignSpeakerLabel } from '@mi/lib/use-cases/speaker-labels';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { AssignLabelBody, AssignLabelResult } from './schema';

const route = op({
  method: 'post',
  path: '/meetings/{id}/speaker-labels',
  operationId: 'assignSpeakerLabel',
  tags: ['meetings'],
  summary: 'Assign a speaker label of the meeting to a person',
  description: [
    'In one transaction: stores the assignment (re-applied whenever segments are appended or replaced),',
    'sets person_id on every transcript segment of the meeting with that speaker_label, and makes each of',
    'those segments with a non-zero feature_vector a voice sample of the person (GET /people/{id}/voice-samples).',
    'Reassigning a label moves its samples from the previous person. Every person concerned has their voice',
    'model recomputed from their samples: voice_vector is the L2-normalised sum of the L2-normalised samples,',
    'voice_confidence their mean cosine similarity to it, voice_model_status ready (untrained without samples).',
    'Repeating an assignment changes nothing. Broadcasts EntityChanged { entity: transcript_segment, action: updated }',
    'and { entity: person, action: updated } for each person whose model changed. 422 when person_id is not one',
    "of your people or no segment of the meeting's transcript has the label. A person_id of a person merged into",
    'another (POST /people/{id}/merge) assigns the label to the person it was merged into.',
  ].join(' '),
  auth: ['bearer'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(AssignLabelBody) },
  responses: { 200: jsonResponse(AssignLabelResult, 'the segments were relabelled'), 404: notFoundResponse('meeting') },
});

export function registerAssignSpeakerLabel(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { speaker_label, person_id } = c.req.valid('json');
    return commit(c, 200, assignSpeakerLabel, { meetingId: id, speakerLabel: speaker_label, personId: person_id });
  });
}
