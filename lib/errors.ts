// Errors in the domain's words: a closed set of codes, raised anywhere below the edges. Each edge
// maps them to its own protocol in one place: REST to RFC 9457 problem+json and its problem types
// (lib/errors/problem.ts: `closed` answers 410 `…/gone`, `too_large` 413
// `…/payload_too_large`), the live service to WebSocket close and error codes (run-services/live/ws-errors.ts).
// Nothing here knows HTTP.

export const ERROR_CODES = [
  'bad_request', // the request itself is malformed (not its values)
  'invalid_cursor', // a page cursor this query did not return
  'unauthorized',
  'forbidden',
  'not_found',
  'operation_not_allowed', // the resource does not take this operation
  'already_exists', // a unique key is taken
  'concurrent_update', // concurrent writers kept colliding; the caller may retry
  'recording_open', // a take of the meeting is still capturing
  'invalid_state', // the record's state does not allow this (e.g. a status transition)
  'in_progress', // the same idempotent request is still running
  'account_conflict',
  'closed', // the window for this action has passed (e.g. gap uploads after their deadline)
  'version_mismatch', // the caller's version (If-Match) is not the record's
  'too_large', // the content exceeds a bound
  'unsupported_format', // content in a format this operation does not take
  'out_of_range', // a byte range past the end of the object
  'unprocessable', // a value fails validation
  'too_many_gaps', // a take would miss more frame ranges than it may (decisions.md section 7)
  'rate_limited', // the caller sent more than it may; retry later
  'internal',
  'unavailable', // a dependency cannot serve now; the caller may retry
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    detail: string,
    readonly errors?: FieldError[],
    /** When a retry may succeed (unavailable, rate_limited). */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);
export const unprocessable = (detail: string, errors?: FieldError[]) =>
  new DomainError('unprocessable', detail, errors);
