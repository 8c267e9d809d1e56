// Object storage adapter over the real @google-cloud/storage client: Cloud Storage in
// production, the in-repo GCS emulator locally and in tests. A Buffer is written in one
// multipart upload request made with undici (uploadBuffer below), the rest through the client.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PassThrough, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import {
  IdempotencyStrategy,
  Storage,
  type File,
  type FileMetadata,
  type PreconditionOptions,
} from '@google-cloud/storage';
import { retry } from '../async';
import { crc32cOf, nativeCrc32cValidator } from './crc32c';
import { serviceAccountAuth } from './google-auth';

export interface StoredObject {
  name: string;
  size: number;
  generation: string;
  crc32c: string;
  md5Hash?: string;
  contentType?: string;
}

export interface WriteOptions {
  contentType?: string;
  /** Fail with ObjectExistsError when the object already exists. */
  createOnly?: boolean;
  ifGenerationMatch?: string | number;
  /** Streams larger than this abort with ObjectTooLargeError and leave no object. */
  maxBytes?: number;
  /**
   * The body's CRC32C (base64), for Buffer bodies, when the caller has it already (else it is
   * computed here): storage checks it and refuses other bytes.
   */
  crc32c?: string;
}

export interface ObjectStore {
  readonly bucket: string;
  /** Creates the bucket when missing (local/test only). */
  ensureBucket(): Promise<void>;
  write(name: string, body: Buffer | NodeJS.ReadableStream, opts?: WriteOptions): Promise<StoredObject>;
  /** The object's bytes; `end` is inclusive. Throws ObjectNotFoundError. */
  read(name: string, range?: { start: number; end?: number }): Promise<NodeJS.ReadableStream>;
  readAll(name: string): Promise<Buffer>;
  stat(name: string): Promise<StoredObject | null>;
  /** Idempotent. */
  delete(name: string): Promise<void>;
  list(prefix: string): Promise<StoredObject[]>;
  /** Concatenates any number of sources, in order, into destination. */
  compose(sources: string[], destination: string, opts?: { contentType?: string }): Promise<StoredObject>;
  signedReadUrl(name: string, ttlSeconds: number): Promise<{ url: string; expiresAt: Date }>;
}

export class ObjectExistsError extends Error {
  override name = 'ObjectExistsError';
}
export class ObjectNotFoundError extends Error {
  override name = 'ObjectNotFoundError';
}
export class ObjectTooLargeError extends Error {
  override name = 'ObjectTooLargeError';
}
/** Storage answered 5xx or 429 after the client's own retries: transient, worth retrying later. */
export class StorageUnavailableError extends Error {
  override name = 'StorageUnavailableError';
}

export interface ObjectStoreOptions {
  bucket: string;
  /** The GCS emulator (http://host:port); wins over STORAGE_EMULATOR_HOST. */
  emulatorHost?: string;
  /** JSON {client_email, private_key} to sign URLs with; absent in production (IAM signBlob through ADC). */
  signerKeyFile?: string;
  projectId?: string;
}

/** GCS allows at most 32 sources per compose call. */
export const MAX_COMPOSE_SOURCES = 32;
/** Intermediate objects of large composes live here until the final compose is done. */
export const COMPOSE_TEMP_PREFIX = '_tmp/compose/';
const MAX_SIGNED_URL_TTL_S = 7 * 24 * 3600;
const COMPOSE_PARALLELISM = 8;
/** Bytes per resumable-upload request (a multiple of 256 KiB): the memory one stream upload holds. */
const UPLOAD_CHUNK_BYTES = 8 * 1024 * 1024;
/** A Buffer upload answering 5xx or 429, or not answering, is sent again after these (ms), 4 tries in all. */
const BUFFER_RETRY_MS = [200, 1_000, 2_000];
const BUFFER_UPLOAD_TIMEOUT_MS = 60_000;

function httpStatusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; status?: unknown; response?: { status?: unknown } } | null;
  for (const v of [e?.code, e?.status, e?.response?.status]) {
    if (typeof v === 'number') return v;
    if (typeof v === 'string' && /^\d{3}$/.test(v)) return Number(v);
  }
  return undefined;
}

function mapError(err: unknown, name: string): unknown {
  const status = httpStatusOf(err);
  if (status === 412) return new ObjectExistsError(`object ${name}: generation precondition failed`, { cause: err });
  if (status === 404) return new ObjectNotFoundError(`object ${name} not found`, { cause: err });
  if (status !== undefined && (status >= 500 || status === 429))
    return new StorageUnavailableError(`object ${name}: storage answered ${status}`, { cause: err });
  return err;
}

function toStored(meta: FileMetadata): StoredObject {
  return {
    name: String(meta.name),
    size: Number(meta.size ?? 0),
    generation: String(meta.generation),
    crc32c: String(meta.crc32c),
    ...(meta.md5Hash ? { md5Hash: meta.md5Hash } : {}),
    ...(meta.contentType ? { contentType: meta.contentType } : {}),
  };
}

function byteLimit(maxBytes: number, name: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > maxBytes) cb(new ObjectTooLargeError(`object ${name} exceeds ${maxBytes} bytes`));
      else cb(null, chunk);
    },
  });
}

/** The message of a JSON API error answer ({"error": {"message"}}), else its text. */
function messageOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 200);
}

/** Cancels an unfinished resumable upload so that its bytes are dropped at once. */
async function cancelUpload(sessionUri: string): Promise<void> {
  await fetch(sessionUri, { method: 'DELETE', signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
}

function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function createObjectStore(opts: ObjectStoreOptions): ObjectStore {
  const apiEndpoint =
    opts.emulatorHost && (/^https?:\/\//.test(opts.emulatorHost) ? opts.emulatorHost : `http://${opts.emulatorHost}`);
  const key = opts.signerKeyFile
    ? (JSON.parse(readFileSync(opts.signerKeyFile, 'utf8')) as { client_email: string; private_key: string })
    : undefined;
  const storage = new Storage({
    // The emulator ignores the project, but bucket creation needs one.
    projectId: opts.projectId ?? (apiEndpoint ? 'local-project' : undefined),
    ...(apiEndpoint ? { apiEndpoint } : {}),
    ...(key ? { authClient: serviceAccountAuth(key) } : {}),
    // Under the default RetryConditional the client turns retries off on the shared Storage
    // for every unconditioned write and can leave them off for later calls. Repeating a call
    // is safe here: a retried write sends the same bytes, deletes ignore 404, and a
    // create-only write whose first try landed reports ObjectExistsError.
    retryOptions: { idempotencyStrategy: IdempotencyStrategy.RetryAlways },
    crc32cGenerator: nativeCrc32cValidator,
  });
  // STORAGE_EMULATOR_HOST, when set, would send JSON-API calls there whatever apiEndpoint says.
  if (apiEndpoint) storage.baseUrl = `${storage.apiEndpoint}/storage/v1`;
  const bucket = storage.bucket(opts.bucket);
  // Google's credentials as the client would send them; the emulator takes none (nor does the client send any there).
  const auth = apiEndpoint ? null : storage.authClient;
  const uploadUrl = `${storage.apiEndpoint}/upload/storage/v1/b/${encodeURIComponent(opts.bucket)}/o`;

  const preconditionsOf = (o: WriteOptions): PreconditionOptions | undefined => {
    if (o.createOnly) return { ifGenerationMatch: 0 };
    if (o.ifGenerationMatch !== undefined) return { ifGenerationMatch: o.ifGenerationMatch };
    return undefined;
  };

  /**
   * A Buffer in one JSON API multipart upload (its metadata, the CRC32C storage checks included,
   * and its bytes in one POST), the request the client's file.save sends. Made here because the
   * client's way to it (a write stream, teeny-request, node-fetch and a pipeline of five streams
   * per object) costs about 1 ms of CPU per object, three times the request's own; the live
   * service writes one object per 2 s of every recording (docs/decisions/0001-segment-objects-in-one-request.md).
   */
  async function uploadBuffer(name: string, body: Buffer, o: WriteOptions): Promise<StoredObject> {
    const boundary = randomUUID();
    const contentType = o.contentType ?? 'application/octet-stream';
    const metadata = JSON.stringify({ name, contentType, crc32c: o.crc32c ?? crc32cOf(body) });
    const query = new URLSearchParams({ uploadType: 'multipart', name });
    const precondition = preconditionsOf(o);
    if (precondition) query.set('ifGenerationMatch', String(precondition.ifGenerationMatch));
    const headers: Record<string, string> = { 'content-type': `multipart/related; boundary=${boundary}` };
    if (auth) for (const [k, v] of await auth.getRequestHeaders()) headers[k] = v;
    const multipart = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\ncontent-type: application/json\r\n\r\n${metadata}\r\n--${boundary}\r\ncontent-type: ${contentType}\r\n\r\n`,
      ),
      body,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    let status: number;
    let text: string;
    try {
      const res = await request(`${uploadUrl}?${query}`, {
        method: 'POST',
        headers,
        body: multipart,
        headersTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
        bodyTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      // No answer (refused, reset, timed out): storage is not reachable now.
      throw new StorageUnavailableError(`object ${name}: ${(err as Error).message}`, { cause: err });
    }
    if (status >= 300) {
      const err = Object.assign(new Error(`object ${name}: storage answered ${status}: ${messageOf(text)}`), {
        code: status,
      });
      throw mapError(err, name);
    }
    return toStored(JSON.parse(text) as FileMetadata);
  }

  async function writeStream(file: File, body: NodeJS.ReadableStream, o: WriteOptions): Promise<void> {
    // Chunked resumable upload: each PUT is sent only once its chunk is complete, so cutting
    // the stream short leaves no request hanging open, and the object is only finalized
    // after the whole stream ended.
    const upload = file.createWriteStream({
      resumable: true,
      chunkSize: UPLOAD_CHUNK_BYTES,
      contentType: o.contentType,
      preconditionOpts: preconditionsOf(o),
    });
    let sessionUri: string | undefined;
    let failed = false;
    upload.on('uri', (uri: string) => {
      sessionUri = uri;
      if (failed) void cancelUpload(uri); // the session was created after the failure
    });
    try {
      if (o.maxBytes !== undefined) await pipeline(body, byteLimit(o.maxBytes, file.name), upload);
      else await pipeline(body, upload);
    } catch (err) {
      failed = true;
      if (sessionUri) await cancelUpload(sessionUri);
      throw err instanceof ObjectTooLargeError ? err : mapError(err, file.name);
    }
  }

  async function composeOnce(sources: string[], destination: string, contentType?: string): Promise<StoredObject> {
    const dest = bucket.file(destination);
    if (contentType) dest.metadata.contentType = contentType;
    try {
      const [, response] = await bucket.combine(sources, dest);
      return toStored(response as FileMetadata);
    } catch (err) {
      throw mapError(err, `${destination} (compose of ${sources.length} sources)`);
    }
  }

  const store: ObjectStore = {
    bucket: opts.bucket,

    async ensureBucket() {
      const [exists] = await bucket.exists();
      if (exists) return;
      await bucket.create().catch((err: unknown) => {
        if (httpStatusOf(err) !== 409) throw err; // created meanwhile by someone else
      });
    },

    async write(name, body, o = {}) {
      if (Buffer.isBuffer(body)) {
        if (o.maxBytes !== undefined && body.length > o.maxBytes)
          throw new ObjectTooLargeError(`object ${name} exceeds ${o.maxBytes} bytes`);
        return retry(() => uploadBuffer(name, body, o), {
          steps: BUFFER_RETRY_MS,
          attempts: BUFFER_RETRY_MS.length + 1,
          giveUp: (err) => !(err instanceof StorageUnavailableError),
        });
      }
      const file = bucket.file(name);
      await writeStream(file, body, o);
      return toStored(file.metadata);
    },

    async read(name, range) {
      const src = bucket.file(name).createReadStream(range ? { start: range.start, end: range.end } : {});
      const out = new PassThrough();
      // Resolve once the response arrived so that a missing object rejects here,
      // not later on the stream.
      await new Promise<void>((resolve, reject) => {
        src.once('response', (res: { statusCode?: number }) => {
          if ((res.statusCode ?? 500) < 300) resolve();
        });
        src.once('error', (err) => reject(mapError(err, name)));
        pipeline(src, out).catch(() => undefined); // errors reach `out`'s reader
      });
      return out;
    },

    async readAll(name) {
      try {
        const [bytes] = await bucket.file(name).download();
        return bytes;
      } catch (err) {
        throw mapError(err, name);
      }
    },

    async stat(name) {
      try {
        const [meta] = await bucket.file(name).getMetadata();
        return toStored(meta);
      } catch (err) {
        if (httpStatusOf(err) === 404) return null;
        throw err;
      }
    },

    async delete(name) {
      await bucket.file(name).delete({ ignoreNotFound: true });
    },

    async list(prefix) {
      const [files] = await bucket.getFiles({ prefix, autoPaginate: true });
      return files.map((f) => toStored(f.metadata));
    },

    async compose(sources, destination, o = {}) {
      if (sources.length === 0) throw new Error('compose needs at least one source');
      const run = `${COMPOSE_TEMP_PREFIX}${randomUUID()}/`;
      const temps: string[] = [];
      try {
        // Compose groups of ≤32 into temporaries, level by level, until ≤32 remain.
        let level = sources;
        for (let depth = 0; level.length > MAX_COMPOSE_SOURCES; depth++) {
          const groups = chunk(level, MAX_COMPOSE_SOURCES);
          const next: string[] = [];
          for (let b = 0; b < groups.length; b += COMPOSE_PARALLELISM) {
            const batch = groups.slice(b, b + COMPOSE_PARALLELISM).map(async (group, j) => {
              if (group.length === 1) return group[0];
              const temp = `${run}${depth}-${b + j}`;
              temps.push(temp);
              await composeOnce(group, temp);
              return temp;
            });
            // Settle the whole batch before failing, so no compose lands after the cleanup.
            const settled = await Promise.allSettled(batch);
            const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
            if (failure) throw failure.reason;
            next.push(...settled.map((r) => (r as PromiseFulfilledResult<string>).value));
          }
          level = next;
        }
        return await composeOnce(level, destination, o.contentType);
      } finally {
        await Promise.all(temps.map((t) => store.delete(t).catch(() => undefined)));
      }
    },

    async signedReadUrl(name, ttlSeconds) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_SIGNED_URL_TTL_S) {
        throw new RangeError(`ttlSeconds must be an integer in 1..${MAX_SIGNED_URL_TTL_S}`);
      }
      // Whole seconds, as the V4 signature counts them, so expiresAt is exact.
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + ttlSeconds) * 1000);
      try {
        const [url] = await bucket.file(name).getSignedUrl({ version: 'v4', action: 'read', expires: expiresAt });
        return { url, expiresAt };
      } catch (err) {
        // No credential to sign with (no key, ADC unreachable) or IAM signBlob refused: the
        // link cannot be made now, which callers answer as a dependency down, never a 500.
        throw new StorageUnavailableError(`object ${name}: cannot sign a read URL: ${(err as Error).message}`, {
          cause: err,
        });
      }
    },
  };
  return store;
}
