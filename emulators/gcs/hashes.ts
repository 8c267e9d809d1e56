// Incremental CRC32C and MD5, reported base64-encoded the way GCS does.
import { createHash, type Hash } from 'node:crypto';
import { crc32cBase64, crc32cUpdate } from '@mi/lib/adapters/crc32c';

export class ObjectHasher {
  private crc = 0;
  private readonly md5: Hash = createHash('md5');
  size = 0;

  update(chunk: Buffer): void {
    this.crc = crc32cUpdate(chunk, this.crc);
    this.md5.update(chunk);
    this.size += chunk.length;
  }

  digest(): { crc32c: string; md5Hash: string; size: number } {
    return { crc32c: crc32cBase64(this.crc), md5Hash: this.md5.digest('base64'), size: this.size };
  }
}
