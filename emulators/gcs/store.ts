// Buckets and objects of the GCS emulator. Metadata lives in memory; object bytes live in
// memory, or under dataDir (one file per generation) so that a restart keeps them.
import { createHash, randomUUID } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  type WriteStream,
} from 'node:fs';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ObjectHasher } from './hashes';

export interface BucketMeta {
  name: string;
  timeCreated: string;
  updated: string;
  metageneration: string;
}

export interface ObjectMeta {
  bucket: string;
  name: string;
  generation: string;
  metageneration: string;
  size: number;
  crc32c: string;
  md5Hash?: string; // composite objects have none, as in GCS
  contentType: string;
  componentCount?: number;
  metadata?: Record<string, string>;
  timeCreated: string;
  updated: string;
}

/** An error the HTTP layer turns into a GCS JSON error body. */
export class GcsError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

export interface Preconditions {
  ifGenerationMatch?: string;
  ifGenerationNotMatch?: string;
}

export const MAX_COMPOSE_SOURCES = 32;

/** Bytes being received for one upload; hashed as they arrive. */
export class UploadSink {
  readonly hasher = new ObjectHasher();
  private readonly chunks: Buffer[] = [];
  private readonly file?: WriteStream;
  private discarded = false;

  constructor(readonly tmpPath?: string) {
    if (tmpPath) this.file = createWriteStream(tmpPath);
  }

  get size(): number {
    return this.hasher.size;
  }

  async write(chunk: Buffer): Promise<void> {
    if (this.discarded) throw new GcsError(410, 'The upload was cancelled.', 'gone');
    this.hasher.update(chunk);
    if (!this.file) {
      this.chunks.push(chunk);
      return;
    }
    if (!this.file.write(chunk)) await new Promise<void>((r) => this.file!.once('drain', () => r()));
  }

  async writeStream(src: AsyncIterable<Buffer>): Promise<void> {
    for await (const chunk of src) await this.write(chunk);
  }

  /** Closes the sink: the in-memory bytes, or nothing when they are in tmpPath. */
  async close(): Promise<Buffer | undefined> {
    if (!this.file) return Buffer.concat(this.chunks);
    this.file.end();
    await finished(this.file);
    return undefined;
  }

  async discard(): Promise<void> {
    this.discarded = true;
    this.chunks.length = 0;
    if (!this.file) return;
    this.file.destroy();
    await unlink(this.tmpPath!).catch(() => {});
  }
}

export class GcsStore {
  private readonly buckets = new Map<string, BucketMeta>();
  private readonly objects = new Map<string, Map<string, ObjectMeta>>();
  private readonly blobs = new Map<string, Buffer>(); // by generation, memory mode only
  private lastGeneration = 0;
  private readonly persisting = new Map<string, Promise<void>>();

  constructor(private readonly dataDir?: string) {
    if (dataDir) this.load(dataDir);
  }

  // ---- buckets ----
  async createBucket(name: string): Promise<BucketMeta> {
    if (!/^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/.test(name))
      throw new GcsError(400, `Invalid bucket name: '${name}'`, 'invalid');
    if (this.buckets.has(name))
      throw new GcsError(
        409,
        'Your previous request to create the named bucket succeeded and you already own it.',
        'conflict',
      );
    const now = new Date().toISOString();
    const meta: BucketMeta = { name, timeCreated: now, updated: now, metageneration: '1' };
    this.buckets.set(name, meta);
    this.objects.set(name, new Map());
    await this.persistJson(join('buckets', `${name}.json`), meta);
    return meta;
  }

  /** GCS deletes empty buckets only: 409 while any object is live. */
  async deleteBucket(name: string): Promise<void> {
    this.getBucket(name);
    if (this.objects.get(name)!.size > 0)
      throw new GcsError(409, 'The bucket you tried to delete is not empty.', 'conflict');
    this.buckets.delete(name);
    this.objects.delete(name);
    if (this.dataDir) await unlink(join(this.dataDir, 'buckets', `${name}.json`)).catch(() => {});
  }

  listBuckets(): BucketMeta[] {
    return [...this.buckets.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  getBucket(name: string): BucketMeta {
    const b = this.buckets.get(name);
    if (!b) throw new GcsError(404, 'The specified bucket does not exist.', 'notFound');
    return b;
  }

  // ---- objects ----
  getObject(bucket: string, name: string, generation?: string): ObjectMeta {
    const meta = this.bucketObjects(bucket).get(name);
    if (!meta || (generation && meta.generation !== generation)) {
      throw new GcsError(404, `No such object: ${bucket}/${name}`, 'notFound');
    }
    return meta;
  }

  list(bucket: string, opts: { prefix?: string; delimiter?: string; pageToken?: string; maxResults?: number }) {
    const objects = this.bucketObjects(bucket);
    const prefix = opts.prefix ?? '';
    const { delimiter, pageToken } = opts;
    const max = Math.min(Math.max(opts.maxResults ?? 1000, 1), 1000);
    const items: ObjectMeta[] = [];
    const prefixes = new Set<string>();
    let last: string | undefined;
    let nextPageToken: string | undefined;
    for (const name of [...objects.keys()].filter((n) => n.startsWith(prefix)).sort()) {
      // The page token is the last name or prefix returned; a prefix covers every name under it.
      if (
        pageToken &&
        (name <= pageToken || (delimiter && pageToken.endsWith(delimiter) && name.startsWith(pageToken)))
      )
        continue;
      const cut = delimiter ? name.indexOf(delimiter, prefix.length) : -1;
      const common = cut >= 0 ? name.slice(0, cut + delimiter!.length) : undefined;
      if (common && prefixes.has(common)) continue;
      if (items.length + prefixes.size >= max) {
        nextPageToken = last;
        break;
      }
      if (common) prefixes.add(common);
      else items.push(objects.get(name)!);
      last = common ?? name;
    }
    return { items, prefixes: [...prefixes], nextPageToken };
  }

  newSink(): UploadSink {
    return new UploadSink(this.dataDir ? join(this.dataDir, 'tmp', randomUUID()) : undefined);
  }

  /** Makes the sink's bytes the live generation of bucket/name, if the preconditions hold. */
  async commit(
    sink: UploadSink,
    target: {
      bucket: string;
      name: string;
      contentType?: string;
      metadata?: Record<string, string>;
      componentCount?: number;
      withoutMd5?: boolean;
    },
    pre: Preconditions,
    expectedHash?: { crc32c?: string; md5?: string },
  ): Promise<ObjectMeta> {
    const bytes = await sink.close();
    const digest = sink.hasher.digest();
    try {
      this.bucketObjects(target.bucket);
      if (expectedHash?.crc32c && expectedHash.crc32c !== digest.crc32c) {
        throw new GcsError(
          400,
          `Provided CRC32C "${expectedHash.crc32c}" doesn't match calculated CRC32C "${digest.crc32c}".`,
          'invalid',
        );
      }
      if (expectedHash?.md5 && expectedHash.md5 !== digest.md5Hash) {
        throw new GcsError(
          400,
          `Provided MD5 hash "${expectedHash.md5}" doesn't match calculated MD5 hash "${digest.md5Hash}".`,
          'invalid',
        );
      }
      this.checkPreconditions(target.bucket, target.name, pre);
    } catch (err) {
      await sink.discard();
      throw err;
    }
    const generation = this.nextGeneration();
    if (bytes) this.blobs.set(generation, bytes);
    else await rename(sink.tmpPath!, this.blobPath(generation));
    // Checked again: another upload of the same name may have committed during the rename.
    try {
      this.checkPreconditions(target.bucket, target.name, pre);
    } catch (err) {
      await this.dropBlob(generation);
      throw err;
    }
    const now = new Date().toISOString();
    const previous = this.bucketObjects(target.bucket).get(target.name);
    const meta: ObjectMeta = {
      bucket: target.bucket,
      name: target.name,
      generation,
      metageneration: '1',
      size: digest.size,
      crc32c: digest.crc32c,
      ...(target.withoutMd5 ? {} : { md5Hash: digest.md5Hash }),
      contentType: target.contentType || 'application/octet-stream',
      ...(target.componentCount ? { componentCount: target.componentCount } : {}),
      ...(target.metadata ? { metadata: target.metadata } : {}),
      timeCreated: now,
      updated: now,
    };
    this.bucketObjects(target.bucket).set(target.name, meta);
    await this.persistObject(target.bucket, target.name);
    if (previous) await this.dropBlob(previous.generation);
    return meta;
  }

  async delete(bucket: string, name: string, pre: Preconditions & { generation?: string }): Promise<void> {
    const meta = this.getObject(bucket, name, pre.generation);
    this.checkPreconditions(bucket, name, pre);
    this.bucketObjects(bucket).delete(name);
    await this.persistObject(bucket, name);
    await this.dropBlob(meta.generation);
  }

  async compose(
    bucket: string,
    destination: string,
    sources: { name: string; generation?: string }[],
    opts: { contentType?: string; metadata?: Record<string, string> },
    pre: Preconditions,
  ): Promise<ObjectMeta> {
    if (sources.length === 0) throw new GcsError(400, 'You must provide at least one source component.', 'required');
    if (sources.length > MAX_COMPOSE_SOURCES) {
      throw new GcsError(
        400,
        `The number of source components provided (${sources.length}) exceeds the maximum (${MAX_COMPOSE_SOURCES}).`,
        'invalid',
      );
    }
    const metas = sources.map((s) => this.getObject(bucket, s.name, s.generation));
    this.checkPreconditions(bucket, destination, pre);
    const sink = this.newSink();
    // Opened at once, so that sources replaced during the copy still read as they were.
    const streams = metas.map((m) => this.read(m));
    try {
      for (const s of streams) await sink.writeStream(s);
    } catch (err) {
      for (const s of streams) s.destroy();
      await sink.discard();
      throw err;
    }
    const componentCount = metas.reduce((n, m) => n + (m.componentCount ?? 1), 0);
    return this.commit(
      sink,
      {
        bucket,
        name: destination,
        contentType: opts.contentType ?? metas[0].contentType,
        metadata: opts.metadata,
        componentCount,
        withoutMd5: true,
      },
      pre,
    );
  }

  /** The object's bytes from start to end inclusive. */
  read(meta: ObjectMeta, start = 0, end = meta.size - 1): Readable {
    if (end < start) return Readable.from([]);
    const bytes = this.blobs.get(meta.generation);
    if (bytes) return Readable.from([bytes.subarray(start, end + 1)]);
    // Opened now, not on the next tick, so that a concurrent overwrite cannot unlink it first.
    return createReadStream('', { fd: openSync(this.blobPath(meta.generation), 'r'), start, end });
  }

  // ---- internals ----
  /** Throws 412 unless the live generation of bucket/name ("0" when absent) satisfies pre. */
  checkPreconditions(bucket: string, name: string, pre: Preconditions): void {
    const current = this.bucketObjects(bucket).get(name)?.generation ?? '0';
    const failed =
      (pre.ifGenerationMatch !== undefined && pre.ifGenerationMatch !== current) ||
      (pre.ifGenerationNotMatch !== undefined && pre.ifGenerationNotMatch === current);
    if (failed)
      throw new GcsError(412, 'At least one of the pre-conditions you specified did not hold.', 'conditionNotMet');
  }

  private bucketObjects(bucket: string): Map<string, ObjectMeta> {
    this.getBucket(bucket);
    return this.objects.get(bucket)!;
  }

  private nextGeneration(): string {
    // Microseconds since the epoch, strictly increasing, like GCS generations.
    this.lastGeneration = Math.max(Date.now() * 1000, this.lastGeneration + 1);
    return String(this.lastGeneration);
  }

  private async dropBlob(generation: string): Promise<void> {
    this.blobs.delete(generation);
    if (this.dataDir) await unlink(this.blobPath(generation)).catch(() => {});
  }

  private blobPath(generation: string): string {
    return join(this.dataDir!, 'blobs', generation);
  }

  private metaPath(bucket: string, name: string): string {
    return join('objects', `${createHash('sha256').update(`${bucket}/${name}`).digest('hex')}.json`);
  }

  /**
   * Writes the live state of bucket/name (or removes it) to disk. Writes of one name are
   * chained, each writing the state current when it runs, so the disk ends as memory does.
   */
  private persistObject(bucket: string, name: string): Promise<void> {
    if (!this.dataDir) return Promise.resolve();
    const relPath = this.metaPath(bucket, name);
    const next = (this.persisting.get(relPath) ?? Promise.resolve()).then(async () => {
      const meta = this.objects.get(bucket)?.get(name);
      if (meta) await this.persistJson(relPath, meta);
      else await unlink(join(this.dataDir!, relPath)).catch(() => {});
    });
    this.persisting.set(relPath, next);
    return next.finally(() => {
      if (this.persisting.get(relPath) === next) this.persisting.delete(relPath);
    });
  }

  private async persistJson(relPath: string, value: unknown): Promise<void> {
    if (!this.dataDir) return;
    const path = join(this.dataDir, relPath);
    const tmp = `${path}.${randomUUID()}.tmp`;
    await writeFile(tmp, JSON.stringify(value));
    await rename(tmp, path);
  }

  private load(dataDir: string): void {
    rmSync(join(dataDir, 'tmp'), { recursive: true, force: true }); // uploads cut short by a stop
    for (const sub of ['buckets', 'objects', 'blobs', 'tmp']) mkdirSync(join(dataDir, sub), { recursive: true });
    const readJson = <T>(dir: string) =>
      readdirSync(join(dataDir, dir))
        .filter((f) => f.endsWith('.json'))
        .map((f) => JSON.parse(readFileSync(join(dataDir, dir, f), 'utf8')) as T);
    for (const b of readJson<BucketMeta>('buckets')) {
      this.buckets.set(b.name, b);
      this.objects.set(b.name, new Map());
    }
    for (const o of readJson<ObjectMeta>('objects')) {
      if (!existsSync(this.blobPath(o.generation))) continue; // meta written, blob lost: not an object
      this.objects.get(o.bucket)?.set(o.name, o);
      this.lastGeneration = Math.max(this.lastGeneration, Number(o.generation));
    }
    // Blobs no object refers to: a stop between storing the bytes and their metadata.
    const live = new Set([...this.objects.values()].flatMap((m) => [...m.values()].map((o) => o.generation)));
    for (const f of readdirSync(join(dataDir, 'blobs')))
      if (!live.has(f)) rmSync(join(dataDir, 'blobs', f), { force: true });
  }
}
