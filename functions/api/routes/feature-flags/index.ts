import type { OpenAPIHono } from '@hono/zod-openapi';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op, z } from '../../openapi';

const FeatureFlagsSchema = z
  .object({ flags: z.record(z.string(), z.union([z.boolean(), z.number(), z.string()])) })
  .openapi('FeatureFlags', { example: { flags: { live_insights: true, max_threads: 20 } } });

const route = op({
  method: 'get',
  path: '/feature-flags',
  operationId: 'getFeatureFlags',
  tags: ['feature-flags'],
  summary: "The caller's feature flags",
  description:
    'Read from Firestore (defaults, then per-user overrides), cached briefly; a change shows within FEATURE_FLAGS_CACHE_SECONDS.',
  auth: ['bearer'],
  responses: { 200: jsonResponse(FeatureFlagsSchema, 'the flags in effect for the caller') },
});

export function registerFeatureFlags(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json({ flags: await c.var.deps.flags.forUser(userIdOf(c)) }, 200));
}
