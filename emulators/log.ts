// The local stack's logger: readable lines on a terminal (pino-pretty), the production JSON
// (Cloud Logging's shape) when stdout is not a terminal or LOG_FORMAT=json, so output piped
// to a file or a tool stays machine-readable.
import pretty from 'pino-pretty';
import { createLogger, SPAN_KEY, TRACE_KEY, type Logger } from '@mi/lib/telemetry/log';

export type LogFormat = 'pretty' | 'json';

export function logFormat(env: Record<string, string | undefined>): LogFormat {
  if (env.LOG_FORMAT === 'json' || env.LOG_FORMAT === 'pretty') return env.LOG_FORMAT;
  return process.stdout.isTTY ? 'pretty' : 'json';
}

export function createStackLogger(
  env: Record<string, string | undefined>,
  level: string,
  destination: NodeJS.WritableStream = process.stdout,
): { log: Logger; format: LogFormat } {
  const format = logFormat(env);
  if (format === 'json')
    return { log: createLogger({ level, name: 'local-stack', project: env.GOOGLE_CLOUD_PROJECT }), format };
  const stream = pretty({
    colorize: process.stdout.isTTY && destination === process.stdout,
    destination,
    messageKey: 'message',
    translateTime: 'SYS:HH:MM:ss',
    // Dots in a key are escaped: pino-pretty reads an unescaped dot as a nested path. trace_id
    // stays (a request's lines are found by it in the local OTLP receiver or Cloud Trace); the
    // Cloud Logging keys repeat it.
    ignore: ['pid', 'hostname', 'service', 'name', TRACE_KEY, SPAN_KEY, 'logging.googleapis.com/trace_sampled']
      .map((k) => k.replaceAll('.', '\\.'))
      .join(','),
    singleLine: true,
    sync: true, // lines appear in order with the child processes' output, and none is lost at exit
  });
  return { log: createLogger({ level, name: 'local-stack', shape: 'pino', destination: stream }), format };
}
