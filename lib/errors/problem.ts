// The HTTP edges' one error mapping (REST in functions/api, and the live service's and the local
// console's /readyz): a domain error becomes RFC 9457 problem+json. Adapter and framework errors
// become domain errors here (`domainErrorOf`), and only here; unknown errors a generic 500
// without internals. Problem types are part of the contract: the specific conflicts of the
// domain all answer `…/conflict`. The WebSocket edge's twin is run-services/live/ws-errors.ts.
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { StorageUnavailableError } from '../adapters/storage';
import { DomainError, type ErrorCode, type FieldError } from '../errors';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
}

export const PROBLEM_TYPE_BASE = 'https://meeting-intelligence.dev/problems/';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const http: Record<ErrorCode, { status: number; type: string; title: string }> = {
  bad_request: { status: 400, type: 'bad_request', title: 'Bad Request' },
  invalid_cursor: { status: 400, type: 'invalid_cursor', title: 'Invalid Cursor' },
  unauthorized: { status: 401, type: 'unauthorized', title: 'Unauthorized' },
  forbidden: { status: 403, type: 'forbidden', title: 'Forbidden' },
  not_found: { status: 404, type: 'not_found', title: 'Not Found' },
  operation_not_allowed: { status: 405, type: 'method_not_allowed', title: 'Method Not Allowed' },
  already_exists: { status: 409, type: 'conflict', title: 'Conflict' },
  concurrent_update: { status: 409, type: 'conflict', title: 'Conflict' },
  recording_open: { status: 409, type: 'conflict', title: 'Conflict' },
  invalid_state: { status: 409, type: 'conflict', title: 'Conflict' },
  in_progress: { status: 409, type: 'conflict', title: 'Conflict' },
  account_conflict: { status: 409, type: 'account_conflict', title: 'Account Conflict' },
  closed: { status: 410, type: 'gone', title: 'Gone' },
  version_mismatch: { status: 412, type: 'precondition_failed', title: 'Precondition Failed' },
  too_large: { status: 413, type: 'payload_too_large', title: 'Payload Too Large' },
  unsupported_format: { status: 415, type: 'unsupported_media_type', title: 'Unsupported Media Type' },
  out_of_range: { status: 416, type: 'range_not_satisfiable', title: 'Range Not Satisfiable' },
  unprocessable: { status: 422, type: 'unprocessable', title: 'Unprocessable Content' },
  too_many_gaps: { status: 422, type: 'too_many_gaps', title: 'Too Many Gaps' },
  rate_limited: { status: 429, type: 'too_many_requests', title: 'Too Many Requests' },
  internal: { status: 500, type: 'internal', title: 'Internal Server Error' },
  unavailable: { status: 503, type: 'unavailable', title: 'Service Unavailable' },
};

// The client errors Hono's validators and middleware raise as HTTPException.
const FRAMEWORK_CODES: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'operation_not_allowed',
  413: 'too_large',
  415: 'unsupported_format',
  422: 'unprocessable',
};

/** A request the route's schema refuses: nothing was read or written for it. */
export class ValidationError extends DomainError {}

/** What adapters and the framework throw, as domain errors; anything else is returned as is (a 500). */
export function domainErrorOf(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  if (err instanceof StorageUnavailableError) {
    return new DomainError(
      'unavailable',
      'object storage is unavailable; nothing was stored, retry shortly',
      undefined,
      2,
    );
  }
  if (err instanceof HTTPException) {
    // Validators and middleware throw these; keep their status within our closed set.
    const code = FRAMEWORK_CODES[err.status];
    if (code) return new DomainError(code, err.message || code.replace(/_/g, ' '));
  }
  return err;
}

export function toProblem(err: unknown): { problem: Problem; headers?: Record<string, string> } {
  const mapped = domainErrorOf(err);
  const e = mapped instanceof DomainError ? mapped : new DomainError('internal', 'An unexpected error occurred.');
  const { status, type, title } = http[e.code];
  const problem: Problem = { type: PROBLEM_TYPE_BASE + type, title, status, detail: e.message };
  if (e.errors?.length) problem.errors = e.errors;
  const headers: Record<string, string> = {};
  if (e.retryAfterSeconds !== undefined) headers['Retry-After'] = String(e.retryAfterSeconds);
  if (e.code === 'unauthorized') headers['WWW-Authenticate'] = 'Bearer'; // RFC 6750
  return { problem, headers };
}

// Through the context, not `new Response`: the headers middleware set before the error
// (X-Request-Id, CORS) stay on the answer.
export function sendProblem(c: Context, err: unknown, extraHeaders: Record<string, string> = {}): Response {
  const { problem, headers } = toProblem(err);
  return c.body(JSON.stringify(problem), problem.status as ContentfulStatusCode, {
    'Content-Type': PROBLEM_CONTENT_TYPE,
    ...headers,
    ...extraHeaders,
  });
}
