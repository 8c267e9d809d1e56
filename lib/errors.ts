// One API error class with a closed set of codes; every error path renders RFC 9457
// problem+json through `toProblem`. Unknown errors become a generic 500 without internals.

export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  account_conflict: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

const titles: Record<ErrorCode, string> = {
  bad_request: 'Bad Request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not Found',
  method_not_allowed: 'Method Not Allowed',
  conflict: 'Conflict',
  account_conflict: 'Account Conflict',
  gone: 'Gone',
  precondition_failed: 'Precondition Failed',
  payload_too_large: 'Payload Too Large',
  unsupported_media_type: 'Unsupported Media Type',
  unprocessable: 'Unprocessable Content',
  too_many_requests: 'Too Many Requests',
  internal: 'Internal Server Error',
  unavailable: 'Service Unavailable',
};

export interface FieldError {
  path: string;
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
}

export const PROBLEM_TYPE_BASE = 'https://meeting-intelligence.dev/problems/';

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
    this.status = errorStatus[code];
  }
}

export const notFound = (what: string) => new ApiError('not_found', `${what} not found`);
export const unprocessable = (detail: string, errors?: FieldError[]) => new ApiError('unprocessable', detail, errors);

export function toProblem(err: unknown): { problem: Problem; headers?: Record<string, string> } {
  const e = err instanceof ApiError ? err : new ApiError('internal', 'An unexpected error occurred.');
  const problem: Problem = { type: PROBLEM_TYPE_BASE + e.code, title: titles[e.code], status: e.status, detail: e.message };
  if (e.errors?.length) problem.errors = e.errors;
  return { problem, headers: e.headers };
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
