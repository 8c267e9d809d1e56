import type { OpenAPIHono } from '@hono/zod-openapi';
import { replaceSynthesis } from '@mi/lib/use-cases/meetings';
import { fencedBy } from '@mi/lib/use-cases/batch-claims';
import { commit } from '../../commit';
import { mlClaimOf } from '../../ml-claim';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, notFoundResponse, op } from '../../openapi';
import { SynthesisBody } from './schema';

const route = op({
  method: 'put',
  path: '/meetings/{id}/synthesis',
  operationId: 'replaceSynthesis',
  tags: ['synthesis'],
  summary: "Atomically replace the meeting's AI synthesis (ML service)",
  description:
    'Replaces summary and key_points, headline when given, and, when topics is given, all topics of the meeting (with their topic_segment rows), in one transaction. Broadcasts EntityChanged { entity: meeting, action: updated } (and { entity: topic, action: updated, id: null } when topics are replaced).',
  auth: ['service'],
  mlClaim: true,
  request: { params: IdParam, ...jsonBody(SynthesisBody) },
  responses: { 204: { description: 'replaced' }, 404: notFoundResponse('meeting') },
});

export function registerReplaceSynthesis(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    const fenced = fencedBy(mlClaimOf(c), { meetingId: id }, replaceSynthesis);
    return commit(c, 204, fenced, { meetingId: id, synthesis: body });
  });
}
