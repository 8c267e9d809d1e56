// The small async tools every part shares: one sleep, one timeout, one backoff, one retry loop, one
// per-key queue.

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class TimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/** `p`, or a TimeoutError after `ms` (p goes on; its outcome is then ignored). The timer never holds the process. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(ms)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Waits for `p` at most `ms`, whatever its outcome: for shutdown steps that must not hold the rest up. */
export const settleWithin = (p: Promise<unknown>, ms: number): Promise<void> =>
  withTimeout(p, ms).then(
    () => undefined,
    () => undefined,
  );

/**
 * The delay before retry `attempt` (0-based): the table's step, capped at its last entry, with
 * "equal jitter" (half fixed, half random) so that many clients failing together do not retry in step.
 */
export function backoffMs(steps: readonly number[], attempt: number, random = Math.random): number {
  const step = steps[Math.min(Math.max(attempt, 0), steps.length - 1)];
  return step / 2 + random() * (step / 2);
}

export interface RetryOptions {
  /** The backoff table (backoffMs): the wait after the n-th failure is its n-th step, jittered. */
  steps: readonly number[];
  /** Tries in all (default: until it succeeds or `giveUp`). */
  attempts?: number;
  /** True for an error not worth another try (or once the caller is shutting down). */
  giveUp?: (err: unknown) => boolean;
  /** Told of each failure that is retried. */
  onRetry?: (err: unknown, failures: number) => void;
}

/** Runs `fn` until it succeeds; past the last try (or `giveUp`) the last error is thrown. */
export async function retry<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await fn();
    } catch (err) {
      if (failures >= (opts.attempts ?? Infinity) || opts.giveUp?.(err)) throw err;
      opts.onRetry?.(err, failures);
      await sleep(backoffMs(opts.steps, failures - 1));
    }
  }
}

/** Runs tasks of one key one after another (tasks of different keys run concurrently). */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const settled = next.catch(() => undefined);
    this.tails.set(key, settled);
    // The map holds only keys with work pending.
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return next;
  }
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
