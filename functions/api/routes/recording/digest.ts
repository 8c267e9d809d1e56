// Content-Digest (RFC 9530): a structured-field dictionary such as `sha-256=:<base64>:`.
// sha-256 and sha-512 are checked; other algorithms are ignored, as the RFC allows.
import { createHash } from 'node:crypto';
import { DomainError } from '@mi/lib/errors';

const SUPPORTED: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };
const MEMBER = /^([a-z][a-z0-9_.*-]*)=:([A-Za-z0-9+/]*={0,2}):$/;

export interface Digest {
  algorithm: string;
  value: Buffer;
}

/** The supported digests of the header; a malformed header is a 400. */
export function parseContentDigest(header: string | undefined): Digest[] {
  if (header === undefined) return [];
  const digests: Digest[] = [];
  for (const raw of header.split(',')) {
    const m = MEMBER.exec(raw.trim());
    if (!m) throw new DomainError('bad_request', 'Content-Digest must look like sha-256=:<base64>: (RFC 9530)');
    if (SUPPORTED[m[1]]) digests.push({ algorithm: m[1], value: Buffer.from(m[2], 'base64') });
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
