// JSON logs (pino) at LOG_LEVEL. Credentials never reach a log line: the paths that can hold
// them are redacted, and request logging records the path without its query string.
import pino, { type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'sig',
  '*.sig',
  'url',
  '*.url',
  'proxy_url',
  '*.proxy_url',
  'secret',
  '*.secret',
  'password',
  '*.password',
];

export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      name: opts.name,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: opts.name },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}
