import type { OpenAPIHono } from '@hono/zod-openapi';
import { createPersonSummary } from '@mi/lib/use-cases/people';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateSummaryBody, PersonSummarySchema } from './schema';

const route = op({
  method: 'post',
  path: '/people/{id}/summaries',
  operationId: 'createPersonSummary',
  tags: ['people'],
  summary: 'Add a summary of a person (the caller is its author)',
  description: "Adds a summary of one of the caller's people; the caller is its author. Requires an Idempotency-Key.",
  auth: ['bearer'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(CreateSummaryBody) },
  responses: { 201: jsonResponse(PersonSummarySchema, 'the created summary'), 404: notFoundResponse('person') },
});

export function registerCreateSummary(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    return commit(c, 201, createPersonSummary, { personId: id, body });
  });
}
