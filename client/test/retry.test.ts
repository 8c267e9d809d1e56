// Reading Retry-After: delta-seconds or an HTTP date (RFC 9110 10.2.3); anything else is ignored.
import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../src/retry';

describe('retryAfterMs', () => {
  it('should read delta-seconds and HTTP dates, and ignore what is neither', () => {
    const now = Date.parse('2026-11-24T20:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 24 Nov 2026 20:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Tue, 24 Nov 2026 19:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs(null, now)).toBeNull();
    expect(retryAfterMs('', now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('-3', now)).toBeNull();
  });
});
