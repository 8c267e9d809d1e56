// Object storage adapter over the real @google-cloud/storage client: Cloud Storage in
// production, the in-repo GCS emulator locally and in tests. Object data moves over undici
// (a Buffer in one multipart upload, a stream in a chunked resumable upload, reads as one GET),
// the rest (metadata, compose, lists, signed links) through the client.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { IdempotencyStrategy, Storage, type FileMetadata, type PreconditionOptions } from '@google-cloud/storage';
import { retry } from '../async';
import { crc32cBase64, crc32cOf, crc32cUpdate, nativeCrc32cValidator } from './crc32c';
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
/** Bytes per resumable-upload request (a multiple of 256 KiB): the one buffer a stream upload holds. */
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

  /**
   * An object's bytes as a stream, one GET made with undici (a whole object's checked against its
   * CRC32C as it passes). The client's read goes through node-fetch, teeny-request and a pipeline of
   * streams per object, which held on to a share of what passed through it (an account export's
   * exporter grew by ~10 MiB per 16 MiB read; bench/export.ts). Rejects once the answer is known:
   * ObjectNotFoundError, StorageUnavailableError.
   */
  async function download(name: string, range?: { start: number; end?: number }): Promise<NodeJS.ReadableStream> {
    const headers = await authHeaders();
    if (range) headers.range = `bytes=${range.start}-${range.end ?? ''}`;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(
        `${storage.apiEndpoint}/storage/v1/b/${encodeURIComponent(opts.bucket)}/o/${encodeURIComponent(name)}?alt=media`,
        {
          headers,
          headersTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
          bodyTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
        },
      );
    } catch (err) {
      throw new StorageUnavailableError(`object ${name}: ${(err as Error).message}`, { cause: err });
    }
    if (res.statusCode >= 300) {
      const text = await res.body.text().catch(() => '');
      const err = Object.assign(new Error(`object ${name}: storage answered ${res.statusCode}: ${messageOf(text)}`), {
        code: res.statusCode,
      });
      throw mapError(err, name);
    }
    const expected = /crc32c=([^,]+)/.exec(String(res.headers['x-goog-hash'] ?? ''))?.[1];
    if (range || !expected) return res.body;
    let crc = 0;
    const check = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        crc = crc32cUpdate(chunk, crc);
        cb(null, chunk);
      },
      flush(cb) {
        cb(crc32cBase64(crc) === expected ? null : new Error(`object ${name}: the bytes read do not match its CRC32C`));
      },
    });
    pipeline(res.body, check).catch(() => undefined); // errors reach `check`'s reader
    return check;
  }

  /** Auth headers as the client would send them (none to the emulator). */
  const authHeaders = async (): Promise<Record<string, string>> => {
    const headers: Record<string, string> = {};
    if (auth) for (const [k, v] of await auth.getRequestHeaders()) headers[k] = v;
    return headers;
  };

  /** One request of a resumable upload (undici, as uploadBuffer); errors as StorageUnavailableError or mapped. */
  async function uploadRequest(
    name: string,
    url: string,
    init: { method: 'POST' | 'PUT'; headers: Record<string, string>; body?: Buffer | string },
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
    let res: Awaited<ReturnType<typeof request>>;
    let text: string;
    try {
      res = await request(url, {
        ...init,
        headers: { ...(await authHeaders()), ...init.headers },
        headersTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
        bodyTimeout: BUFFER_UPLOAD_TIMEOUT_MS,
      });
      text = await res.body.text();
    } catch (err) {
      throw new StorageUnavailableError(`object ${name}: ${(err as Error).message}`, { cause: err });
    }
    if (res.statusCode >= 300 && res.statusCode !== 308) {
      const err = Object.assign(new Error(`object ${name}: storage answered ${res.statusCode}: ${messageOf(text)}`), {
        code: res.statusCode,
      });
      throw mapError(err, name);
    }
    return { status: res.statusCode, headers: res.headers, text };
  }

  /**
   * A stream in a chunked resumable upload made here: its bytes are copied into one buffer of
   * UPLOAD_CHUNK_BYTES, reused for every chunk, and each full buffer is one PUT. The client's own
   * upload keeps every chunk it receives until its PUT is answered, so a long stream leaves behind
   * a chunk's worth of old-generation Buffers per request, freed only by a full GC (an account
   * export's exporter reached +129 MiB; bench/export.ts). Each PUT is sent only once its chunk
   * is complete, so a stream cut short leaves no request open; the object exists only once the
   * stream ended, and a failed upload is cancelled.
   */
  async function writeStream(name: string, body: NodeJS.ReadableStream, o: WriteOptions): Promise<StoredObject> {
    const query = new URLSearchParams({ uploadType: 'resumable', name });
    const precondition = preconditionsOf(o);
    if (precondition) query.set('ifGenerationMatch', String(precondition.ifGenerationMatch));
    const contentType = o.contentType ?? 'application/octet-stream';
    const started = await retry(
      () =>
        uploadRequest(name, `${uploadUrl}?${query}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-upload-content-type': contentType },
          body: JSON.stringify({ name, contentType }),
        }),
      {
        steps: BUFFER_RETRY_MS,
        attempts: BUFFER_RETRY_MS.length + 1,
        giveUp: (err) => !(err instanceof StorageUnavailableError),
      },
    );
    const session = String(started.headers.location ?? '');
    if (!session) throw new StorageUnavailableError(`object ${name}: no upload session`);
    const buffer = Buffer.allocUnsafe(UPLOAD_CHUNK_BYTES);
    let filled = 0;
    let sent = 0; // bytes storage holds
    let crc = 0;

    /** Sends buffer[0, filled) from `sent` on (the last chunk when `total` is known); retried from what storage holds. */
    const flush = async (total?: number): Promise<StoredObject | null> => {
      const base = sent;
      for (let attempt = 0; ; attempt++) {
        try {
          const from = sent - base;
          const bytes = buffer.subarray(from, filled);
          const range =
            bytes.length === 0 ? `bytes */${total ?? '*'}` : `bytes ${sent}-${sent + bytes.length - 1}/${total ?? '*'}`;
          const headers: Record<string, string> = { 'content-range': range };
          if (total !== undefined) headers['x-goog-hash'] = `crc32c=${crc32cBase64(crc)}`;
          const res = await uploadRequest(name, session, { method: 'PUT', headers, body: bytes });
          if (res.status !== 308) return toStored(JSON.parse(res.text) as FileMetadata);
          sent = Number(/-(\d+)$/.exec(String(res.headers.range ?? ''))?.[1] ?? -1) + 1;
          if (sent >= base + filled) return null;
        } catch (err) {
          if (!(err instanceof StorageUnavailableError) || attempt >= BUFFER_RETRY_MS.length) throw err;
          await new Promise((r) => setTimeout(r, BUFFER_RETRY_MS[attempt]));
          // What storage holds now (a status query), then the rest of the chunk again.
          const status = await uploadRequest(name, session, {
            method: 'PUT',
            headers: { 'content-range': 'bytes */*' },
          }).catch(() => null);
          if (status?.status === 308) sent = Number(/-(\d+)$/.exec(String(status.headers.range ?? ''))?.[1] ?? -1) + 1;
        }
      }
    };

    try {
      // Leaving the loop early (too large) must not destroy the body: a request's socket would go
      // with it, before the caller could answer 413.
      const pieces = body instanceof Readable ? body.iterator({ destroyOnReturn: false }) : body;
      for await (const piece of pieces as AsyncIterable<Buffer | string>) {
        let chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
        if (o.maxBytes !== undefined && sent + filled + chunk.length > o.maxBytes)
          throw new ObjectTooLargeError(`object ${name} exceeds ${o.maxBytes} bytes`);
        crc = crc32cUpdate(chunk, crc);
        while (chunk.length) {
          const n = chunk.copy(buffer, filled);
          filled += n;
          chunk = chunk.subarray(n);
          if (filled === buffer.length) {
            await flush();
            filled = 0;
          }
        }
      }
      const stored = await flush(sent + filled);
      if (!stored) throw new StorageUnavailableError(`object ${name}: the upload did not complete`);
      return stored;
    } catch (err) {
      await cancelUpload(session);
      throw err;
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
      return writeStream(name, body, o);
    },

    async read(name, range) {
      return retry(() => download(name, range), {
        steps: BUFFER_RETRY_MS,
        attempts: BUFFER_RETRY_MS.length + 1,
        giveUp: (err) => !(err instanceof StorageUnavailableError),
      });
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
