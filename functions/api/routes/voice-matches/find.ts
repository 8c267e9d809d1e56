import type { OpenAPIHono } from '@hono/zod-openapi';
import { findVoiceMatches, voiceSearchSettings } from '@mi/lib/repositories/voice';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op, Vector192, z } from '../../openapi';
import { PersonBriefSchema } from '../people/schema';

const Body = z
  .object({
    feature_vector: Vector192.refine(
      (v) => v.some((x) => x !== 0),
      'must not be all zeros (cosine similarity is undefined)',
    ),
    limit: z.number().int().min(1).max(100).default(10),
  })
  .strict()
  .openapi('VoiceMatchQuery');

const Result = z
  .object({
    items: z.array(
      z.object({ person: PersonBriefSchema, similarity: z.number().openapi({ description: '1 - cosine distance' }) }),
    ),
  })
  .openapi('VoiceMatches');

const route = op({
  method: 'post',
  path: '/people/voice-matches',
  operationId: 'findVoiceMatches',
  tags: ['people'],
  summary: "The caller's people whose voice is most similar to an embedding",
  description: 'People with a voice_vector, by cosine similarity, highest first (HNSW index).',
  auth: ['bearer'],
  request: jsonBody(Body),
  responses: { 200: jsonResponse(Result, 'the matches') },
});

export function registerFindVoiceMatches(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { feature_vector, limit } = c.req.valid('json');
    const items = await findVoiceMatches(
      c.var.deps.db,
      userIdOf(c),
      feature_vector,
      limit,
      voiceSearchSettings(c.var.deps.config),
    );
    return c.json({ items }, 200);
  });
}
