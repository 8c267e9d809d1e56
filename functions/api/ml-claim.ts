// The ML-Claim header (decisions.md section 8): the batch pass's claim id, sent with the claim's
// renewal and with its writes, which are refused (409 invalid_state) once the claim is not the
// transcription's current one. `op({ mlClaim: true })` declares it; handlers read it here.
import type { Context } from 'hono';
import { z } from '@hono/zod-openapi';
import type { AppEnv } from './env';

export const ML_CLAIM_HEADER = 'ml-claim';

export const MlClaimHeader = z
  .string()
  .uuid()
  .optional()
  .openapi({
    description:
      'the batch pass’s claim_id (from the claim, PATCH /transcriptions/{id} to synthesizing): the write is refused ' +
      '409 invalid_state once that claim is no longer the current one (expired or replaced). Without it, the write is not fenced',
  });

/** The ML-Claim the caller sent (validated as a uuid by the operation's header schema), if any. */
export const mlClaimOf = (c: Context<AppEnv>): string | undefined => c.req.header(ML_CLAIM_HEADER) || undefined;

export const ML_CLAIM_CONFLICT =
  'invalid_state: ML-Claim is not the current claim of the transcription (it expired, was released and the take offered again, or another pass claimed it)';
