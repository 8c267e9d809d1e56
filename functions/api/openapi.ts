// Shared OpenAPI pieces and `op()`, the one way an operation is declared: it adds the security
// requirement, the documented headers, the shared problem responses and the matching
// middleware (auth, idempotency), so documentation and behaviour cannot drift apart.
import { createRoute, z, type RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { Scheme } from '@mi/lib/adapters/auth';
import type { AppEnv } from './env';
import { requireAuth } from './middleware/auth';
import { idempotent, optionallyIdempotent } from './middleware/idempotency';
import { ignoreUnknownFieldsOfService } from './middleware/service-body';
import { ML_CLAIM_CONFLICT, ML_CLAIM_HEADER, MlClaimHeader } from './ml-claim';

export { z };

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: 'https://meeting-intelligence.dev/problems/not_found' }),
    title: z.string().openapi({ example: 'Not Found' }),
    status: z.number().int().openapi({ example: 404 }),
    detail: z.string().openapi({ example: 'meeting not found' }),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .openapi('Problem');

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ProblemSchema } },
});

export const Uuid = z.string().uuid().openapi({ example: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e' });
export const IdParam = z.object({ id: Uuid.openapi({ param: { name: 'id', in: 'path' } }) });
export const Timestamp = z.string().datetime({ offset: true }).openapi({ example: '2026-11-22T09:00:00.000Z' });
// vector(192) stores 32-bit floats; larger values would fail in SQL instead of validation.
const FLOAT4_MAX = 3.4028234663852886e38;
export const Vector192 = z
  .array(z.number().finite().min(-FLOAT4_MAX).max(FLOAT4_MAX, 'must fit a 32-bit float'))
  .length(192, 'must have exactly 192 dimensions')
  // zod-to-openapi does not render .length(); the bounds are stated so clients (and the
  // schema-driven tests) see them.
  .openapi({ description: 'Embedding of exactly 192 finite numbers', minItems: 192, maxItems: 192 });
export const MAX_JSON_DEPTH = 64;

/** Nesting depth within `max`, walked without recursion (the value may be arbitrarily deep). */
function depthWithin(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return false;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return true;
}

/** A free-form member's bound, serialised (decisions.md section 6): lists stay small enough to send. */
export const MAX_JSON_MEMBER_BYTES = 256 * 1024;

/**
 * JSON value (jsonb columns), nested at most MAX_JSON_DEPTH levels (deeper values overflow the
 * stack when serialised) and at most MAX_JSON_MEMBER_BYTES serialised.
 */
export const Json = z
  .any()
  .superRefine((v, ctx) => {
    // Depth first: serialising a deeper value would overflow the stack.
    if (!depthWithin(v, MAX_JSON_DEPTH))
      ctx.addIssue({ code: 'custom', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` });
    else if (v !== undefined && Buffer.byteLength(JSON.stringify(v)) > MAX_JSON_MEMBER_BYTES)
      ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_JSON_MEMBER_BYTES / 1024} KiB serialised` });
  })
  .openapi({
    description: `any JSON value, nested at most ${MAX_JSON_DEPTH} levels, at most ${MAX_JSON_MEMBER_BYTES / 1024} KiB serialised`,
  });

export const PageQuery = {
  limit: z.coerce.number().int().min(1).max(200).default(50).openapi({ description: 'page size (1-200, default 50)' }),
  cursor: z.string().max(512).optional().openapi({ description: 'opaque cursor from next_cursor' }),
};

export const page = <T extends z.ZodTypeAny>(item: T, name: string) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullable() }).openapi(name);

type OpConfig = Omit<RouteConfig, 'security' | 'middleware'> & {
  operationId: string;
  auth: readonly Scheme[];
  /** Requires Idempotency-Key (creating, retryable POSTs); 'optional': honours it when sent. */
  idempotent?: boolean | 'optional';
  /** Honours If-Match against the record's ETag (412 when it no longer matches). */
  conditional?: boolean;
  /** A batch-pass write: takes ML-Claim (409 when that claim is no longer current; ml-claim.ts). */
  mlClaim?: boolean;
};

const securityNames: Record<Scheme, string> = { bearer: 'bearerAuth', service: 'serviceAuth' };

/** What `op` declares: the route as written (minus our own keys), so handlers stay typed by its schemas. */
type Declared<C extends OpConfig> = ReturnType<
  typeof createRoute<C['path'], Omit<C, 'auth' | 'idempotent' | 'conditional' | 'mlClaim'>>
>;

export function op<const C extends OpConfig>(cfg: C): Declared<C> {
  const middleware: MiddlewareHandler<AppEnv>[] = [requireAuth(cfg.auth)];
  if (cfg.idempotent) middleware.push(cfg.idempotent === 'optional' ? optionallyIdempotent : idempotent);
  // The ML's bodies ignore unknown fields, users' stay strict (middleware/service-body.ts): last, so
  // the idempotency record hashes the body as sent.
  const body = jsonBodySchema(cfg);
  if (body && cfg.auth.includes('service')) middleware.push(ignoreUnknownFieldsOfService(body));
  const headers = z.object({
    ...(cfg.idempotent === true
      ? { 'idempotency-key': Uuid.openapi({ description: 'required; a uuid per logical request' }) }
      : {}),
    ...(cfg.idempotent === 'optional'
      ? {
          'idempotency-key': Uuid.optional().openapi({
            description: 'optional; a repeat with the same key and body is answered as the first, adding nothing',
          }),
        }
      : {}),
    'x-client-id': Uuid.optional().openapi({
      description: 'originating client; its WebSocket connection gets no echo of the resulting events',
    }),
    ...(cfg.mlClaim ? { [ML_CLAIM_HEADER]: MlClaimHeader } : {}),
    ...(cfg.conditional
      ? {
          'if-match': z
            .string()
            .optional()
            .openapi({ description: 'the ETag of the record as last read (or *): 412 when it changed since' }),
        }
      : {}),
  });
  const { auth, idempotent: _i, conditional: _c, mlClaim: _m, ...route } = cfg;
  const responses: RouteConfig['responses'] = {
    ...route.responses,
    400: problem('malformed request (bad JSON, missing or invalid Idempotency-Key)'),
    401: problem('missing or invalid credentials'),
    403: problem('valid credentials of a scheme this operation does not accept'),
    413: problem('body too large'),
    422: problem('validation failed; `errors` lists the fields'),
    500: problem('unexpected error (no internals disclosed)'),
    ...(cfg.auth.includes('bearer') && !(409 in (route.responses ?? {}))
      ? {
          409: problem(
            "account_conflict: the token's email belongs to another account (emails are unique case-insensitively)",
          ),
        }
      : {}),
    ...(cfg.idempotent
      ? {
          409: problem(
            'a request with this Idempotency-Key is still in progress, or a conflict; or account_conflict (see above)',
          ),
        }
      : {}),
    ...(cfg.conditional
      ? { 412: problem("If-Match does not match the record's current ETag: it changed since it was read") }
      : {}),
  };
  if (cfg.mlClaim) {
    const other = (responses[409] as { description?: string } | undefined)?.description;
    responses[409] = problem(other ? `${other}; or ${ML_CLAIM_CONFLICT}` : ML_CLAIM_CONFLICT);
  }
  return createRoute({
    ...route,
    ...(body && cfg.auth.includes('service')
      ? {
          description: `${route.description ? `${route.description} ` : ''}${
            cfg.auth.includes('bearer')
              ? "With service credentials, body fields the core does not know are ignored (a user's are 422)."
              : 'Body fields the core does not know are ignored.'
          }`,
        }
      : {}),
    security: auth.map((s) => ({ [securityNames[s]]: [] })),
    middleware,
    request: { headers, ...(route.request ?? {}) },
    responses,
  } as RouteConfig) as Declared<C>;
}

/** The JSON request body's schema of an operation, if it has one. */
function jsonBodySchema(cfg: OpConfig): z.ZodType | undefined {
  const body = cfg.request?.body as { content?: Record<string, { schema?: unknown }> } | undefined;
  const schema = body?.content?.['application/json']?.schema;
  return schema instanceof z.ZodType ? schema : undefined;
}

export const jsonBody = <T extends z.ZodTypeAny>(schema: T, description?: string) => ({
  body: { required: true, description, content: { 'application/json': { schema } } },
});

export const jsonResponse = <T extends z.ZodTypeAny>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** A response carrying the record's ETag (for If-Match on a later PATCH). */
export const withEtag = <R extends { description: string }>(response: R) => ({
  ...response,
  headers: z.object({
    etag: z
      .string()
      .openapi({ description: 'strong entity tag of the record; send it as If-Match to PATCH only if unchanged' }),
  }),
});

export const notFoundResponse = (what: string) => problem(`${what} not found`);
export const problemResponse = problem;
