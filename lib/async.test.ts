// The one retry loop: it tries until success, gives up after its attempts or when told to, and
// waits a jittered step of its table between tries.
import { describe, expect, it } from 'vitest';
import { backoffMs, retry } from './async';

const failing = (failures: number) => {
  let calls = 0;
  const fn = async () => {
    calls++;
    if (calls <= failures) throw new Error(`failure ${calls}`);
    return calls;
  };
  return { fn, calls: () => calls };
};

describe('retry', () => {
  it('should retry until the call succeeds, telling each retried failure', async () => {
    const f = failing(3);
    const told: number[] = [];
    await expect(retry(f.fn, { steps: [1], onRetry: (_, n) => told.push(n) })).resolves.toBe(4);
    expect(told).toEqual([1, 2, 3]);
  });

  it('should throw the last error once its attempts are spent', async () => {
    const f = failing(10);
    await expect(retry(f.fn, { steps: [1], attempts: 3 })).rejects.toThrow('failure 3');
    expect(f.calls()).toBe(3);
  });

  it('should stop at once when giveUp says so', async () => {
    const f = failing(10);
    await expect(retry(f.fn, { steps: [1], giveUp: (err) => (err as Error).message === 'failure 2' })).rejects.toThrow(
      'failure 2',
    );
    expect(f.calls()).toBe(2);
  });
});

describe('backoffMs', () => {
  it('should keep half of the step fixed and jitter the other half, capped at the last step', () => {
    expect(backoffMs([100, 400], 0, () => 0)).toBe(50);
    expect(backoffMs([100, 400], 0, () => 1)).toBe(100);
    expect(backoffMs([100, 400], 7, () => 0.5)).toBe(300);
  });
});
