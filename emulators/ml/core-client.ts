// The fake ML service's calls back into the core REST API, with the service token and the
// caller's trace context.
const TIMEOUT_MS = 10_000;

export interface CoreResponse {
  status: number;
  body: any;
}

export interface CoreClient {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<CoreResponse>;
}

export class CoreCallError extends Error {
  override name = 'CoreCallError';
  constructor(readonly method: string, readonly path: string, readonly status: number, readonly detail: string) {
    super(`${method} ${path} answered ${status}: ${detail}`);
  }
}

export function createCoreClient(baseUrl: string, serviceToken: string): CoreClient {
  return {
    async call(method, path, body, headers = {}) {
      const res = await fetch(baseUrl.replace(/\/$/, '') + path, {
        method,
        headers: {
          authorization: `Bearer ${serviceToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed };
    },
  };
}

/** Calls and insists on a 2xx answer. */
export async function callOk(core: CoreClient, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<CoreResponse> {
  const res = await core.call(method, path, body, headers);
  if (res.status < 200 || res.status >= 300) {
    throw new CoreCallError(method, path, res.status, typeof res.body === 'object' ? String(res.body?.detail ?? '') : String(res.body ?? ''));
  }
  return res;
}
