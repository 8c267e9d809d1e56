import type { OpenAPIHono } from '@hono/zod-openapi';
import { rotateWebhookSecret } from '@mi/lib/use-cases/webhooks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, notFoundResponse, op } from '../../openapi';
import { RotatedSecretSchema, RotateSecretBody } from './schema';

const route = op({
  method: 'post',
  path: '/webhooks/{id}/rotate-secret',
  operationId: 'rotateWebhookSecret',
  tags: ['webhooks'],
  summary: "Rotate a webhook's signing secret",
  description:
    'Issues a new secret, returned here only. For WEBHOOK_SECRET_OVERLAP_SECONDS (default 24 h) every delivery carries ' +
    'both signatures, space-separated (`webhook-signature: v1,<new> v1,<old>`): a receiver verifying with either ' +
    'secret accepts it, so it can switch without losing a delivery. `{"expire_previous": true}` stops signing with ' +
    'the previous secret at once (a rotation during an overlap ends that overlap too). Requires an Idempotency-Key ' +
    '(a replay answers the same secret).',
  auth: ['bearer'],
  idempotent: true,
  request: {
    params: IdParam,
    body: { required: false, content: { 'application/json': { schema: RotateSecretBody } } },
  },
  responses: {
    200: jsonResponse(RotatedSecretSchema, 'the new secret (shown once)'),
    404: notFoundResponse('webhook'),
  },
});

export function registerRotateWebhookSecret(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) =>
    commit(c, 200, rotateWebhookSecret, {
      id: c.req.valid('param').id,
      expire_previous: c.req.valid('json').expire_previous ?? false,
      overlapSeconds: c.var.deps.config.WEBHOOK_SECRET_OVERLAP_SECONDS,
    }),
  );
}
