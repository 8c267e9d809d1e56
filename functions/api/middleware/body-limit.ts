// Request bodies are bounded before anything reads them, whatever their Content-Type claims (a
// declared Content-Length above the bound is refused without reading; a chunked body is counted
// as it streams): API_MAX_JSON_BYTES, except the service's bulk writes (segments with their
// embeddings, a synthesis with its topics' segment ids) under API_MAX_BULK_JSON_BYTES. Raw uploads
// are streamed by their routes under their own limits (RECORDING_MAX_UPLOAD_BYTES,
// RECORDING_MAX_CHUNK_BYTES).
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { DomainError } from '@mi/lib/errors';
import type { AppEnv } from '../env';

export const RAW_BODY_TYPE = /^\s*(audio\/|application\/octet-stream\b)/i;

/** The bulk writes: PUT/POST /transcriptions/{id}/segments, PUT /meetings/{id}/synthesis. */
const BULK_PATHS = [/^\/transcriptions\/[^/]+\/segments$/, /^\/meetings\/[^/]+\/synthesis$/];

const limitOf = (maxSize: number) =>
  bodyLimit({
    maxSize,
    onError: () => {
      throw new DomainError('too_large', `request body exceeds ${maxSize} bytes`);
    },
  });

export function limitBodies(limits: { json: number; bulk: number }): MiddlewareHandler<AppEnv> {
  const json = limitOf(limits.json);
  const bulk = limitOf(limits.bulk);
  return async (c, next) => {
    if (RAW_BODY_TYPE.test(c.req.header('content-type') ?? '')) return next();
    return (BULK_PATHS.some((p) => p.test(c.req.path)) ? bulk : json)(c, next);
  };
}
