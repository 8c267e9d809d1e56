// Errors in the domain's words: a closed set of codes, raised anywhere below the edges. Each edge
// maps them to its own protocol in one place: REST to RFC 9457 problem+json
// (functions/api/problem.ts), the live service to WebSocket error codes (run-services/live).
// Nothing here knows HTTP.

export const ERROR_CODES = [
  'bad_request', // the request itself is malformed (not its values)
  'invalid_cursor', // a page cursor this query did not return
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'already_exists', // a unique key is taken
  'concurrent_update', // concurrent writers kept colliding; the caller may retry
  'recording_open', // a take of the meeting is still capturing
  'invalid_state', // the record's state does not allow this (e.g. a status transition)
  'in_progress', // the same idempotent request is still running
  'account_conflict',
  'gone',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'range_not_satisfiable', // a byte range past the end of the object
  'unprocessable', // a value fails validation
  'too_many_gaps', // a take would miss more frame ranges than it may (decisions.md section 7)
  'too_many_requests',
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
    /** When a retry may succeed (unavailable, too_many_requests). */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);
export const unprocessable = (detail: string, errors?: FieldError[]) =>
  new DomainError('unprocessable', detail, errors);
