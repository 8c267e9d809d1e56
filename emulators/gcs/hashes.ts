// Incremental CRC32C (Castagnoli) and MD5, reported base64-encoded the way GCS does
// (crc32c as the 4 big-endian bytes). Node 20 has no built-in CRC32C.
import { createHash, type Hash } from 'node:crypto';

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export class ObjectHasher {
  private crc = 0xffffffff;
  private readonly md5: Hash = createHash('md5');
  size = 0;

  update(chunk: Buffer): void {
    let c = this.crc;
    for (let i = 0; i < chunk.length; i++) c = TABLE[(c ^ chunk[i]) & 0xff] ^ (c >>> 8);
    this.crc = c;
    this.md5.update(chunk);
    this.size += chunk.length;
  }

  digest(): { crc32c: string; md5Hash: string; size: number } {
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE((this.crc ^ 0xffffffff) >>> 0);
    return { crc32c: crc.toString('base64'), md5Hash: this.md5.digest('base64'), size: this.size };
  }
}
