// Content-Digest (RFC 9530): a structured-field dictionary such as `sha-256=:<base64>:`.
// sha-256 and sha-512 are checked; other algorithms are ignored, as the RFC allows.
import { createHash } from 'node:crypto';
import { parseDictionary, type Dictionary } from 'structured-headers';
import { DomainError } from '@mi/lib/errors';

const SUPPORTED: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };
const malformed = () => new DomainError('bad_request', 'Content-Digest must look like sha-256=:<base64>: (RFC 9530)');

export interface Digest {
  algorithm: string;
  value: Buffer;
}

/** The supported digests of the header; a malformed header is a 400. */
export function parseContentDigest(header: string | undefined): Digest[] {
  if (header === undefined) return [];
  let dictionary: Dictionary;
  try {
    dictionary = parseDictionary(header);
  } catch {
    throw malformed();
  }
  const digests: Digest[] = [];
  for (const [algorithm, [value]] of dictionary) {
    // Every member's value is a byte sequence (RFC 9530 section 2), whatever its algorithm.
    if (!(value instanceof ArrayBuffer || ArrayBuffer.isView(value))) throw malformed();
    const bytes =
      value instanceof ArrayBuffer ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    if (SUPPORTED[algorithm]) digests.push({ algorithm, value: bytes });
  }
  return digests;
}

/** 422 when a digest does not match the bytes. */
export function assertDigests(digests: Digest[], bytes: Buffer): void {
  for (const d of digests) {
    if (!createHash(SUPPORTED[d.algorithm]).update(bytes).digest().equals(d.value)) {
      throw new DomainError('unprocessable', `Content-Digest ${d.algorithm} does not match the body`);
    }
  }
}
