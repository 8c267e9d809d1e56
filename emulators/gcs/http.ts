// HTTP helpers of the GCS emulator: bodies, errors in the JSON and XML API shapes, object
// resources, and media responses with Range.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { GcsStore, ObjectMeta, Preconditions } from './store';
import { GcsError } from './store';

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function readJson(req: IncomingMessage): Promise<Record<string, any>> {
  const body = await readBody(req);
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new GcsError(400, 'Parse Error', 'parseError');
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=UTF-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The JSON API error body; the client turns it into an DomainError carrying `code`. */
export function sendJsonError(res: ServerResponse, status: number, message: string, reason: string): void {
  sendJson(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason }] } });
}

/** The XML API error body, as served for signed URLs. */
export function sendXmlError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  details: string,
): void {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const xml = `<?xml version='1.0' encoding='UTF-8'?><Error><Code>${esc(code)}</Code><Message>${esc(message)}</Message><Details>${esc(details)}</Details></Error>`;
  res.writeHead(status, { 'Content-Type': 'application/xml; charset=UTF-8', 'Content-Length': Buffer.byteLength(xml) });
  res.end(xml);
}

export function baseUrlOf(req: IncomingMessage): string {
  return `http://${req.headers.host ?? 'localhost'}`;
}

export const encodeName = (name: string) => encodeURIComponent(name);

export function objectResource(m: ObjectMeta, baseUrl: string) {
  return {
    kind: 'storage#object',
    id: `${m.bucket}/${m.name}/${m.generation}`,
    selfLink: `${baseUrl}/storage/v1/b/${m.bucket}/o/${encodeName(m.name)}`,
    mediaLink: `${baseUrl}/download/storage/v1/b/${m.bucket}/o/${encodeName(m.name)}?generation=${m.generation}&alt=media`,
    name: m.name,
    bucket: m.bucket,
    generation: m.generation,
    metageneration: m.metageneration,
    contentType: m.contentType,
    storageClass: 'STANDARD',
    size: String(m.size),
    ...(m.md5Hash ? { md5Hash: m.md5Hash } : {}),
    crc32c: m.crc32c,
    etag: Buffer.from(`${m.generation}/${m.metageneration}`).toString('base64'),
    ...(m.componentCount ? { componentCount: m.componentCount } : {}),
    ...(m.metadata ? { metadata: m.metadata } : {}),
    timeCreated: m.timeCreated,
    updated: m.updated,
    timeStorageClassUpdated: m.timeCreated,
  };
}

function param(q: URLSearchParams, name: string): string | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!/^\d+$/.test(v)) throw new GcsError(400, `Invalid value for ${name}: ${v}`, 'invalid');
  return String(BigInt(v)); // "007" and "7" are the same generation
}

export function preconditionsOf(q: URLSearchParams): Preconditions {
  return { ifGenerationMatch: param(q, 'ifGenerationMatch'), ifGenerationNotMatch: param(q, 'ifGenerationNotMatch') };
}

export function generationOf(q: URLSearchParams): string | undefined {
  return param(q, 'generation');
}

/** Parses `bytes=a-b`, `bytes=a-` and `bytes=-n`; undefined for no or unsupported Range. */
function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

/** Serves the object's bytes (honouring Range) with the headers the client validates. */
export async function sendMedia(
  req: IncomingMessage,
  res: ServerResponse,
  store: GcsStore,
  m: ObjectMeta,
): Promise<void> {
  const headers: Record<string, string | number> = {
    'Content-Type': m.contentType,
    'Accept-Ranges': 'bytes',
    ETag: `"${m.md5Hash ? Buffer.from(m.md5Hash, 'base64').toString('hex') : m.generation}"`,
    'Last-Modified': new Date(m.updated).toUTCString(),
    'x-goog-generation': m.generation,
    'x-goog-metageneration': m.metageneration,
    'x-goog-hash': [`crc32c=${m.crc32c}`, ...(m.md5Hash ? [`md5=${m.md5Hash}`] : [])].join(','),
    'x-goog-stored-content-encoding': 'identity',
    'x-goog-stored-content-length': m.size,
  };
  const range = parseRange(req.headers.range, m.size);
  if (range === 'unsatisfiable') {
    const body = 'Request range not satisfiable';
    res.writeHead(416, {
      'Content-Range': `bytes */${m.size}`,
      'Content-Type': 'text/plain',
      'Content-Length': body.length,
    });
    res.end(body);
    return;
  }
  const { start, end } = range ?? { start: 0, end: m.size - 1 };
  const status = range ? 206 : 200;
  if (range) headers['Content-Range'] = `bytes ${start}-${end}/${m.size}`;
  headers['Content-Length'] = Math.max(0, end - start + 1);
  res.writeHead(status, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  await pipeline(store.read(m, start, end), res);
}
