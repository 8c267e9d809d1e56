// Request bodies are bounded by API_MAX_JSON_BYTES before anything reads them, whatever their
// Content-Type claims (a declared Content-Length above it is refused without reading; a chunked
// body is counted as it streams). Raw uploads are the exception: their routes stream them under
// their own limits (RECORDING_MAX_UPLOAD_BYTES, RECORDING_MAX_CHUNK_BYTES).
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '@mi/lib/errors';
import type { AppEnv } from '../env';

export const RAW_BODY_TYPE = /^\s*(audio\/|application\/octet-stream\b)/i;

export function limitBodies(maxSize: number): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError('payload_too_large', `request body exceeds ${maxSize} bytes`);
    },
  });
  return async (c, next) => {
    if (RAW_BODY_TYPE.test(c.req.header('content-type') ?? '')) return next();
    return limit(c, next);
  };
}
