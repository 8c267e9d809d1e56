import type { OpenAPIHono } from '@hono/zod-openapi';
import { search } from '@mi/lib/repositories/search';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { jsonResponse, op } from '../../openapi';
import { SearchPage, SearchQuery } from './schema';

const route = op({
  method: 'get',
  path: '/search',
  operationId: 'search',
  tags: ['search'],
  summary:
    "Full-text search over the caller's transcript segments, notes, talking points and meeting titles, best or newest first",
  description:
    'Postgres full-text search (configuration english). Only your own items; items of soft-deleted meetings (and notes about them) are ' +
    'never returned. Ordered as `sort` says. The cursor is a keyset on the order of the last item: following next_cursor gives ' +
    'every match exactly once, provided the items do not change meanwhile (an item edited between two pages is placed anew and ' +
    'may be seen twice or not at all). A cursor is bound to its user, q, filters and sort: one this endpoint did not return for ' +
    'the same query is 400, problem type invalid_cursor. limit may change between pages.',
  auth: ['bearer'],
  request: { query: SearchQuery },
  responses: { 200: jsonResponse(SearchPage, 'a page of matches, in the order of sort') },
});

export function registerSearch(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const result = await search(c.var.deps.db, userIdOf(c), c.req.valid('query'));
    return c.json(result, 200);
  });
}
