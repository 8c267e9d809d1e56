import type { OpenAPIHono } from '@hono/zod-openapi';
import { updateTranscription } from '@mi/lib/use-cases/transcriptions';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, problemResponse } from '../../openapi';
import { mlClaimOf } from '../../ml-claim';
import { ClaimedTranscriptionSchema, PatchTranscriptionBody } from './schema';

const route = op({
  method: 'patch',
  path: '/transcriptions/{id}',
  operationId: 'updateTranscription',
  tags: ['transcriptions'],
  summary: 'Update status, status_message or is_degraded (the status machine applies)',
  description:
    'Every status change appends a status-history row. Broadcasts EntityChanged { entity: transcription, action: updated }. ' +
    'The batch pass (docs/ml-integration.md): the move to synthesizing claims the take for ML_BATCH_CLAIM_LEASE_SECONDS (the answer carries claim_id and claim_expires_at); ' +
    'the same PATCH with ML-Claim renews the lease; a claim sent with an Idempotency-Key and repeated with it (its answer was lost) gets the first answer, claim_id included; completed or failed with ML-Claim only while that claim is current (a repeat of the status the claim set is answered 200 again). ' +
    'The sweep releases an expired claim: back to transcribing (history message `batch claim expired`) with recording.finalized published again (attempt + 1), or failed (`batch pass abandoned`) after ML_BATCH_MAX_ATTEMPTS expired claims.',
  auth: ['service'],
  // A claim whose answer was lost is repeated with its Idempotency-Key and gets its claim_id back.
  idempotent: 'optional',
  mlClaim: true,
  request: { params: IdParam, ...jsonBody(PatchTranscriptionBody) },
  responses: {
    200: jsonResponse(ClaimedTranscriptionSchema, 'the transcription, with the claim while synthesizing'),
    404: notFoundResponse('transcription'),
    409: problemResponse(
      'invalid_state: the status machine does not allow this transition, or the transcription is already claimed (synthesizing)',
    ),
  },
});

export function registerUpdateTranscription(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const patch = c.req.valid('json');
    const leaseSeconds = c.var.deps.config.ML_BATCH_CLAIM_LEASE_SECONDS;
    return commit(c, 200, updateTranscription, { id, patch, claim: mlClaimOf(c), leaseSeconds });
  });
}
