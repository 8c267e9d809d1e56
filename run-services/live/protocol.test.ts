import { describe, expect, it } from 'vitest';
import { frameSequence } from './protocol';

const frame = (seq: bigint) => {
  const b = Buffer.alloc(9);
  b.writeBigUInt64BE(seq);
  return b;
};

describe('frameSequence', () => {
  it('should read the 8-byte big-endian sequence across the 32-bit boundary up to 2^53 − 1', () => {
    for (const seq of [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n, 0x1_2345_6789n, BigInt(Number.MAX_SAFE_INTEGER)])
      expect(frameSequence(frame(seq))).toBe(Number(seq));
  });

  it('should refuse a sequence above 2^53 − 1 and a frame with no audio', () => {
    expect(frameSequence(frame(BigInt(Number.MAX_SAFE_INTEGER) + 1n))).toBeNull();
    expect(frameSequence(frame(2n ** 64n - 1n))).toBeNull();
    expect(frameSequence(Buffer.alloc(8))).toBeNull();
  });
});
