// Logs (pino) at LOG_LEVEL, shaped for Cloud Logging: every line has `severity`, `message`, `time`
// and, inside a traced request, `logging.googleapis.com/trace` and `.../spanId`, so the console
// groups a request's lines under its trace. Credentials never reach a log line: the keys that can
// hold them are redacted, URLs keep everything but their query string and user info, and request
// logging records the path without its query string.
import { trace } from '@opentelemetry/api';
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

const URL_KEYS = new Set(['url', 'proxy_url']);

/**
 * A URL without what can be secret: the query string (signatures, tokens) and user info. The
 * address itself is what the reader needs (the stack's ready line, the storage endpoint).
 */
export function redactUrl(value: unknown): unknown {
  if (typeof value !== 'string') return '[redacted]';
  try {
    const u = new URL(value);
    const hadQuery = u.search !== '';
    const hadAuth = u.username !== '' || u.password !== '';
    u.search = '';
    u.hash = '';
    u.username = '';
    u.password = '';
    let out = u.toString();
    if (u.pathname === '/' && !value.endsWith('/')) out = out.slice(0, -1); // as written: http://localhost:4002
    if (hadAuth) out = out.replace('//', '//[redacted]@');
    return hadQuery ? `${out}?[redacted]` : out;
  } catch {
    return '[redacted]';
  }
}

// pino level name -> Cloud Logging LogSeverity.
const SEVERITY: Record<string, string> = {
  trace: 'DEBUG',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARNING',
  error: 'ERROR',
  fatal: 'CRITICAL',
};

export const TRACE_KEY = 'logging.googleapis.com/trace';
export const SPAN_KEY = 'logging.googleapis.com/spanId';

export interface LoggerOptions {
  level?: string;
  name?: string;
  destination?: pino.DestinationStream;
  /** The Google Cloud project the trace names belong to (GOOGLE_CLOUD_PROJECT). */
  project?: string;
  /**
   * 'cloud' (default): severity strings, for Cloud Logging. 'pino': pino's numeric levels,
   * which pino-pretty reads (the local stack on a terminal).
   */
  shape?: 'cloud' | 'pino';
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const project = opts.project ?? process.env.GOOGLE_CLOUD_PROJECT ?? 'local-project';
  return pino(
    {
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      name: opts.name,
      messageKey: 'message',
      redact: {
        paths: REDACT_PATHS,
        censor: (value, path) => (URL_KEYS.has(path[path.length - 1]) ? redactUrl(value) : '[redacted]'),
      },
      base: { service: opts.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: opts.shape === 'pino' ? {} : { level: (label) => ({ severity: SEVERITY[label] ?? 'DEFAULT' }) },
      // Joins each line to the active span: the request's own, continuing its traceparent.
      mixin() {
        const ctx = trace.getActiveSpan()?.spanContext();
        if (!ctx || /^0+$/.test(ctx.traceId)) return {};
        return {
          [TRACE_KEY]: `projects/${project}/traces/${ctx.traceId}`,
          [SPAN_KEY]: ctx.spanId,
          'logging.googleapis.com/trace_sampled': (ctx.traceFlags & 1) === 1,
        };
      },
      hooks: {
        // Every line has a message, also log.info({...}) without one.
        logMethod(args, method) {
          // (An Error alone is left to pino, which takes its message.)
          if (args.length === 1 && typeof args[0] === 'object' && args[0] !== null && !(args[0] instanceof Error))
            return method.apply(this, [args[0] as object, '']);
          return method.apply(this, args as Parameters<typeof method>);
        },
      },
    },
    opts.destination,
  );
}
