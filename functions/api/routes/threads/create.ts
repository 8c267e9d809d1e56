import type { OpenAPIHono } from '@hono/zod-openapi';
import { createThread } from '@mi/lib/use-cases/threads';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { jsonBody, jsonResponse, op } from '../../openapi';
import { AiThreadSchema, CreateThreadBody } from './schema';

const route = op({
  method: 'post',
  path: '/threads',
  operationId: 'createThread',
  tags: ['threads'],
  summary: 'Start an AI chat thread, optionally about a person or meeting',
  description:
    "The context must be the caller's person or meeting (else 422). Broadcasts EntityChanged { entity: ai_thread, action: created }.",
  auth: ['bearer'],
  idempotent: true,
  request: jsonBody(CreateThreadBody),
  responses: { 201: jsonResponse(AiThreadSchema, 'the created thread') },
});

export function registerCreateThread(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const body = c.req.valid('json');
    return commit(c, 201, createThread, body);
  });
}
