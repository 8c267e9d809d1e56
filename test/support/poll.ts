// The one way a test waits for something: poll a condition until it holds, never a sleep that
// decides an outcome. `sleep` is lib/async's, for pacing (a poll's interval, a client's rhythm).
export { sleep } from '@mi/lib/async';
import { sleep } from '@mi/lib/async';

export interface PollOptions<T> {
  /** When the value read is the one waited for (default: it is truthy; so never undefined). */
  ok?: (value: T | undefined) => boolean;
  /** Default 20 s. */
  timeoutMs?: number;
  /** Between reads; default 50 ms. */
  intervalMs?: number;
  /** More to show when it times out (a process's output, a page's log). */
  context?: () => string;
}

/**
 * Reads `read()` until its value is the one waited for, and returns that value. A read that
 * throws counts as not yet; after `timeoutMs` the error names `what` and the last value or error.
 */
export async function until<T>(
  what: string,
  read: () => T | undefined | Promise<T | undefined>,
  opts: PollOptions<T> = {},
): Promise<T> {
  const { ok = Boolean, timeoutMs = 20_000, intervalMs = 50, context } = opts;
  const end = Date.now() + timeoutMs;
  for (;;) {
    let last: string;
    try {
      const value = await read();
      if (ok(value)) return value as T;
      last = `last value: ${JSON.stringify(value)?.slice(0, 500)}`;
    } catch (err) {
      last = `last error: ${(err as Error).message}`;
    }
    if (Date.now() > end) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${last}${context ? `\n${context()}` : ''}`);
    }
    await sleep(intervalMs);
  }
}
