// Reconnect delays: exponential from 500 ms, capped at the spec's 30 s, with "equal jitter"
// (half fixed, half random) so many tabs that lost the same server do not return in lockstep.
export const BACKOFF_BASE_MS = 500;
export const BACKOFF_MAX_MS = 30_000;

/** Delay before reconnect attempt `attempt` (0 for the first retry). */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  return Math.round(cap / 2 + (random() * cap) / 2);
}
