// RFC 9457 problem+json answers as an Error, for callers that prefer throwing to `{ error }`.
export class ApiProblem extends Error {
  override name = 'ApiProblem';
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    /** The problem document as the server sent it (type, errors, …). */
    readonly body: unknown = undefined,
  ) {
    super(`${status} ${title}: ${detail}`);
  }
}

/** Builds an ApiProblem from a failed answer and its parsed body (openapi-fetch's `error`). */
export function problemOf(response: Response, body: unknown): ApiProblem {
  const p = (typeof body === 'object' && body !== null ? body : {}) as { title?: string; detail?: string };
  const detail = p.detail ?? (typeof body === 'string' ? body.slice(0, 300) : '');
  return new ApiProblem(response.status, p.title ?? response.statusText, detail, body);
}

/** The data of a successful openapi-fetch result; an ApiProblem otherwise. */
export function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw problemOf(result.response, result.error);
  return result.data as T;
}
