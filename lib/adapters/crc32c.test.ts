// The native CRC32C agrees with the storage client's own implementation and with GCS's encoding.
import { CRC32C } from '@google-cloud/storage';
import { describe, expect, it } from 'vitest';
import { crc32cOf, crc32cUpdate, crc32cBase64, nativeCrc32cValidator } from './crc32c';

describe('crc32c', () => {
  it('should match the storage client on known and random bytes, whole or in pieces', () => {
    expect(crc32cOf(Buffer.from('data'))).toBe('rth90Q=='); // the client documentation's example
    for (const size of [0, 1, 7, 4096, 100_003]) {
      const bytes = Buffer.from(Array.from({ length: size }, (_, i) => (i * 131 + size) & 0xff));
      const reference = new CRC32C();
      reference.update(bytes);
      expect(crc32cOf(bytes)).toBe(reference.toString());
      const cut = Math.floor(size / 3);
      expect(crc32cBase64(crc32cUpdate(bytes.subarray(cut), crc32cUpdate(bytes.subarray(0, cut))))).toBe(
        reference.toString(),
      );
    }
  });

  it('should validate as the storage client expects of a crc32cGenerator', () => {
    const v = nativeCrc32cValidator();
    v.update(Buffer.from('da'));
    v.update(Buffer.from('ta'));
    expect(v.toString()).toBe('rth90Q==');
    expect(v.validate('rth90Q==')).toBe(true);
    expect(v.validate('DkjKuA==')).toBe(false);
  });
});
