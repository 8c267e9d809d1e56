// CRC32C (Castagnoli), natively: the JavaScript implementation costs ~1.6 ms per 64 KB, which
// every stored audio segment pays on both ends. Encoded as Cloud Storage reports it: base64 of
// the 4 big-endian bytes.
import { crc32c } from '@node-rs/crc32';

/** The CRC of `chunk` appended to bytes whose CRC was `previous` (0 for none). */
export const crc32cUpdate = (chunk: Uint8Array, previous = 0): number => crc32c(chunk as Buffer, previous);

export function crc32cBase64(value: number): string {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value >>> 0);
  return bytes.toString('base64');
}

export const crc32cOf = (body: Uint8Array): string => crc32cBase64(crc32cUpdate(body));

/** For the storage client (`crc32cGenerator`): its own upload and download checks, natively. */
export function nativeCrc32cValidator() {
  let value = 0;
  return {
    update: (data: Buffer) => void (value = crc32cUpdate(data, value)),
    toString: () => crc32cBase64(value),
    validate: (expected: string) => expected === crc32cBase64(value),
  };
}
