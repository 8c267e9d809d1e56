// Object uploads: uploadType=media, multipart and resumable (sessions with Content-Range
// chunks, 308 + Range for incomplete ones, status queries, DELETE to cancel).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { baseUrlOf, encodeName, objectResource, preconditionsOf, readBody, readJson, sendJson } from './http';
import { GcsError, type GcsStore, type ObjectMeta, type Preconditions, type UploadSink } from './store';

interface Session {
  bucket: string;
  name: string;
  contentType?: string;
  metadata?: Record<string, string>;
  pre: Preconditions;
  sink: UploadSink;
  done?: ObjectMeta;
  touched: number;
}

const SESSION_IDLE_MS = 60 * 60 * 1000; // abandoned sessions are dropped after an hour

function requireName(name: string | undefined | null): string {
  if (!name) throw new GcsError(400, 'Required', 'required');
  if (Buffer.byteLength(name) > 1024) throw new GcsError(400, 'The object name is too long.', 'invalid');
  return name;
}

/** The X-Goog-Hash header a client may send with the final bytes. */
function expectedHashOf(req: IncomingMessage): { crc32c?: string; md5?: string } {
  const out: { crc32c?: string; md5?: string } = {};
  for (const part of String(req.headers['x-goog-hash'] ?? '').split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const [k, v] = [part.slice(0, i).trim(), part.slice(i + 1).trim()];
    if (k === 'crc32c') out.crc32c = v;
    if (k === 'md5') out.md5 = v;
  }
  return out;
}

/**
 * The boundary parameter of a multipart Content-Type. gcloud (apitools) writes it as a Python
 * repr, in single quotes (`boundary='===...=='`), so both quote styles are stripped.
 */
function boundaryOf(contentType: string): string {
  const m = /;\s*boundary=(?:"([^"]+)"|'([^']+)'|([^\s;]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2] ?? m?.[3];
  if (!boundary) throw new GcsError(400, 'Missing multipart boundary.', 'invalid');
  return boundary;
}

/** The length of the line break (CRLF or a bare LF) at pos, 0 when there is none. */
function lineBreakAt(body: Buffer, pos: number): number {
  if (body[pos] === 0x0d && body[pos + 1] === 0x0a) return 2;
  return body[pos] === 0x0a ? 1 : 0;
}

/** The first empty line of a part, which ends its headers. */
function blankLineIn(part: Buffer): { headersEnd: number; dataStart: number } | undefined {
  if (lineBreakAt(part, 0)) return { headersEnd: 0, dataStart: lineBreakAt(part, 0) }; // a part without headers
  for (let i = part.indexOf(0x0a); i >= 0; i = part.indexOf(0x0a, i + 1)) {
    const br = lineBreakAt(part, i + 1);
    if (br) return { headersEnd: i, dataStart: i + 1 + br };
  }
  return undefined;
}

/**
 * Splits a multipart/related body into its parts (headers lowercased). Line breaks may be
 * CRLF (RFC 2046, @google-cloud/storage) or bare LF (gcloud's Python email generator); the
 * break before each delimiter belongs to the delimiter, not to the part's data.
 */
function parseMultipart(body: Buffer, contentType: string): { headers: Record<string, string>; data: Buffer }[] {
  const delimiter = Buffer.from(`--${boundaryOf(contentType)}`);
  const parts: { headers: Record<string, string>; data: Buffer }[] = [];
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    const afterDelimiter = pos + delimiter.length;
    if (body.subarray(afterDelimiter, afterDelimiter + 2).toString() === '--') break;
    const start = afterDelimiter + lineBreakAt(body, afterDelimiter);
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    let end = next;
    if (body[end - 1] === 0x0a) end -= body[end - 2] === 0x0d ? 2 : 1;
    const part = body.subarray(start, end);
    const split = blankLineIn(part);
    if (!split) throw new GcsError(400, 'Malformed multipart body.', 'invalid');
    const headers: Record<string, string> = {};
    for (const line of part.subarray(0, split.headersEnd).toString('utf8').split(/\r?\n/)) {
      const i = line.indexOf(':');
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    parts.push({ headers, data: part.subarray(split.dataStart) });
    pos = next;
  }
  if (parts.length !== 2)
    throw new GcsError(400, 'A multipart upload needs a metadata part and a media part.', 'invalid');
  return parts;
}

export class Uploads {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly store: GcsStore) {}

  async handle(req: IncomingMessage, res: ServerResponse, bucket: string, q: URLSearchParams): Promise<void> {
    const uploadId = q.get('upload_id');
    if (uploadId) return this.continueSession(req, res, uploadId);
    if (req.method !== 'POST') throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
    this.store.getBucket(bucket);
    const uploadType = q.get('uploadType') ?? 'media';
    if (uploadType === 'resumable') return this.startSession(req, res, bucket, q);
    if (uploadType === 'multipart') return this.multipart(req, res, bucket, q);
    if (uploadType === 'media') return this.media(req, res, bucket, q);
    throw new GcsError(400, `Invalid upload type: ${uploadType}`, 'invalid');
  }

  private async media(req: IncomingMessage, res: ServerResponse, bucket: string, q: URLSearchParams): Promise<void> {
    const name = requireName(q.get('name'));
    const sink = this.store.newSink();
    try {
      await this.receive(req, sink, 0);
    } catch (err) {
      await sink.discard();
      throw err;
    }
    const meta = await this.store.commit(
      sink,
      { bucket, name, contentType: req.headers['content-type'] },
      preconditionsOf(q),
      expectedHashOf(req),
    );
    sendJson(res, 200, objectResource(meta, baseUrlOf(req)));
  }

  private async multipart(
    req: IncomingMessage,
    res: ServerResponse,
    bucket: string,
    q: URLSearchParams,
  ): Promise<void> {
    const [metaPart, mediaPart] = parseMultipart(await readBody(req), String(req.headers['content-type'] ?? ''));
    let resource: Record<string, any>;
    try {
      resource = metaPart.data.length ? JSON.parse(metaPart.data.toString('utf8')) : {};
    } catch {
      throw new GcsError(400, 'Parse Error', 'parseError');
    }
    const name = requireName(q.get('name') ?? resource.name);
    const sink = this.store.newSink();
    await sink.write(mediaPart.data);
    const contentType = resource.contentType ?? mediaPart.headers['content-type'];
    // As in GCS, hashes in the resource are checked like an X-Goog-Hash header.
    const expected = {
      ...expectedHashOf(req),
      ...(resource.crc32c ? { crc32c: String(resource.crc32c) } : {}),
      ...(resource.md5Hash ? { md5: String(resource.md5Hash) } : {}),
    };
    const meta = await this.store.commit(
      sink,
      { bucket, name, contentType, metadata: resource.metadata },
      preconditionsOf(q),
      expected,
    );
    sendJson(res, 200, objectResource(meta, baseUrlOf(req)));
  }

  private async startSession(
    req: IncomingMessage,
    res: ServerResponse,
    bucket: string,
    q: URLSearchParams,
  ): Promise<void> {
    const resource = await readJson(req);
    const name = requireName(q.get('name') ?? resource.name);
    const pre = preconditionsOf(q);
    this.store.checkPreconditions(bucket, name, pre); // one that fails already fails the initiation, as in GCS
    this.dropIdleSessions();
    const id = randomUUID();
    const contentType = (req.headers['x-upload-content-type'] as string | undefined) ?? resource.contentType;
    this.sessions.set(id, {
      bucket,
      name,
      contentType,
      metadata: resource.metadata,
      pre,
      sink: this.store.newSink(),
      touched: Date.now(),
    });
    const location = `${baseUrlOf(req)}/upload/storage/v1/b/${bucket}/o?uploadType=resumable&name=${encodeName(name)}&upload_id=${id}`;
    res.writeHead(200, { Location: location, 'X-GUploader-UploadID': id, 'Content-Length': 0 });
    res.end();
  }

  private async continueSession(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) throw new GcsError(404, 'No such upload session.', 'notFound');
    session.touched = Date.now();
    if (req.method === 'DELETE') {
      this.sessions.delete(id);
      await session.sink.discard();
      res.writeHead(499, { 'Content-Length': 0 });
      res.end();
      return;
    }
    if (req.method !== 'PUT' && req.method !== 'POST')
      throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
    if (session.done) {
      await readBody(req);
      return sendJson(res, 200, objectResource(session.done, baseUrlOf(req)));
    }
    const range = String(req.headers['content-range'] ?? '');
    const sink = session.sink;
    let final: boolean;
    let status: RegExpExecArray | null;
    let chunk: RegExpExecArray | null;
    if (!range) {
      await this.receive(req, sink, sink.size); // no Content-Range: the body is the rest of the object
      final = true;
    } else if ((status = /^bytes \*\/(\d+|\*)$/.exec(range))) {
      await readBody(req); // a status query, or the announcement of the total size
      final = status[1] !== '*' && Number(status[1]) === sink.size;
    } else if ((chunk = /^bytes (\d+)-(\d+|\*|-1)\/(\d+|\*)$/.exec(range))) {
      // "-1" as last byte: the client's spelling of an empty final chunk ("bytes 0--1/0").
      const start = Number(chunk[1]);
      if (start > sink.size)
        throw new GcsError(
          400,
          `Invalid request. The chunk starts at ${start}, the upload has ${sink.size} bytes.`,
          'invalid',
        );
      await this.receive(req, sink, start);
      const total = chunk[3] === '*' ? undefined : Number(chunk[3]);
      if (total !== undefined && sink.size > total)
        throw new GcsError(400, 'Invalid request. More bytes than the declared total.', 'invalid');
      // "a-*" means the body runs to the end of the object.
      final = chunk[2] === '*' || sink.size === total;
    } else {
      throw new GcsError(400, `Invalid Content-Range: ${range}`, 'invalid');
    }
    if (!final) {
      const headers: Record<string, string | number> = { 'Content-Length': 0 };
      if (sink.size > 0) headers.Range = `bytes=0-${sink.size - 1}`;
      res.writeHead(308, headers);
      res.end();
      return;
    }
    try {
      session.done = await this.store.commit(
        sink,
        { bucket: session.bucket, name: session.name, contentType: session.contentType, metadata: session.metadata },
        session.pre,
        expectedHashOf(req),
      );
    } finally {
      if (!session.done) this.sessions.delete(id);
    }
    sendJson(res, 200, objectResource(session.done, baseUrlOf(req)));
  }

  /** Appends the request body to the sink, skipping bytes before its current size. */
  private async receive(req: IncomingMessage, sink: UploadSink, offset: number): Promise<void> {
    let skip = sink.size - offset;
    for await (const piece of req) {
      let data = piece as Buffer;
      if (skip > 0) {
        const n = Math.min(skip, data.length);
        data = data.subarray(n);
        skip -= n;
      }
      if (data.length) await sink.write(data);
    }
  }

  private dropIdleSessions(): void {
    const now = Date.now();
    for (const [id, s] of this.sessions) {
      if (now - s.touched > SESSION_IDLE_MS) {
        this.sessions.delete(id);
        void s.sink.discard();
      }
    }
  }
}
