import type { OpenAPIHono } from '@hono/zod-openapi';
import { unassignSpeakerLabel } from '@mi/lib/use-cases/speaker-labels';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { notFoundResponse, op } from '../../openapi';
import { LabelParams } from './schema';

const route = op({
  method: 'delete',
  path: '/meetings/{id}/speaker-labels/{speaker_label}',
  operationId: 'unassignSpeakerLabel',
  tags: ['meetings'],
  summary: 'Remove a speaker-label assignment of the meeting',
  description: [
    'In one transaction: deletes the assignment (so appended or replaced segments no longer get the person),',
    'clears person_id on every transcript segment of the meeting with that speaker_label, removes those',
    "segments' voice samples and recomputes the person's voice model from the samples left (no samples:",
    'voice_vector null, voice_model_status untrained). Broadcasts EntityChanged { entity: transcript_segment,',
    'action: updated } and { entity: person, action: updated }. 404 when the meeting is not yours or has no',
    'assignment of this label.',
  ].join(' '),
  auth: ['bearer'],
  request: { params: LabelParams },
  responses: { 204: { description: 'the assignment was removed' }, 404: notFoundResponse('meeting or assignment') },
});

export function registerUnassignSpeakerLabel(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id, speaker_label } = c.req.valid('param');
    return commit(c, 204, unassignSpeakerLabel, { meetingId: id, speakerLabel: speaker_label });
  });
}
