import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateMeeting } from '@mi/lib/use-cases/meetings';
import { fencedBy } from '@mi/lib/use-cases/batch-claims';
import { commit } from '../../commit';
import { mlClaimOf } from '../../ml-claim';
import { ifMatch } from '../../etag';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, withEtag } from '../../openapi';
import { MeetingSchema, PatchMeetingBody } from './schema';

const route = op({
  method: 'patch',
  path: '/meetings/{id}',
  operationId: 'updateMeeting',
  tags: ['meetings'],
  summary: 'Partially update meeting metadata (the ML service sets headline)',
  description: 'Broadcasts EntityChanged { entity: meeting, action: updated }.',
  conditional: true,
  mlClaim: true,
  auth: ['bearer', 'service'],
  request: { params: IdParam, ...jsonBody(PatchMeetingBody) },
  responses: { 200: withEtag(jsonResponse(MeetingSchema, 'the full meeting')), 404: notFoundResponse('meeting') },
});

export function registerUpdateMeeting(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    const fenced = fencedBy(mlClaimOf(c), { meetingId: id }, updateMeeting);
    return commit(c, 200, fenced, { id, patch, precondition: ifMatch(c) }, { etag: true });
  });
}
