import { DomainError } from '@mi/lib/errors';

/** Reads a request body of at most maxBytes, counting as it streams (413 beyond). */
export async function readBounded(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new DomainError('too_large', `the body exceeds ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** 413 at once when the declared Content-Length is above the limit. */
export function assertDeclaredLength(header: string | undefined, maxBytes: number): void {
  if (header !== undefined && /^\d+$/.test(header) && Number(header) > maxBytes) {
    throw new DomainError('too_large', `the body exceeds ${maxBytes} bytes`);
  }
}
