// Retrying 503 and 429 answers: the server says when (Retry-After, seconds or an HTTP date), we
// wait that long, within bounds, so a client never hammers an overloaded service nor hangs.
// A 409 is retried only when it carries Retry-After: the server sends it on concurrent_update
// (concurrent writers kept colliding and nothing was written), never on a conflict a retry cannot
// cure. Colliding writers retry with exponential backoff and full jitter, so they spread out.
export interface RetryOptions {
  /** Retries after the first attempt (0 turns retrying off). */
  retries: number;
  /** Wait when the answer has no usable Retry-After, doubled per retry. */
  baseDelayMs: number;
  /** A Retry-After longer than this is not waited for: the answer is returned as it is. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { retries: 3, baseDelayMs: 500, maxDelayMs: 30_000 };

const RETRYABLE = new Set([429, 503]);

/** Whether an answer may succeed when repeated. */
const retryable = (res: Response) =>
  RETRYABLE.has(res.status) || (res.status === 409 && res.headers.has('retry-after'));

/** Milliseconds a Retry-After value asks for, or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  const v = value?.trim() ?? '';
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date names its day and month; a bare number like "-3" would parse as a year.
  if (!/^[A-Za-z]{3}, /.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * A fetch that repeats the same Request (same headers, so the same Idempotency-Key) on 503/429
 * and on a 409 with Retry-After.
 * The request is cloned per attempt because a body can be read once.
 */
export function retryingFetch(
  base: (r: Request) => Promise<Response>,
  opts: RetryOptions = DEFAULT_RETRY,
): (r: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const res = await base(request.clone());
      if (!retryable(res) || attempt >= opts.retries) return res;
      const backoff = opts.baseDelayMs * 2 ** attempt;
      const after = retryAfterMs(res.headers.get('retry-after'));
      const wait = res.status === 409 ? Math.max(after ?? 0, Math.random() * backoff) : (after ?? backoff);
      if (wait > opts.maxDelayMs) return res;
      await res.body?.cancel().catch(() => undefined);
      await new Promise((r) => setTimeout(r, wait));
    }
  };
}
