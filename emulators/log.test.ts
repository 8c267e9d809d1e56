import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { createStackLogger } from './log';

it('should show the trace id and request id on pretty lines, without the Cloud Logging keys', async () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d) => (text += d));
  const { log, format } = createStackLogger({ LOG_FORMAT: 'pretty' }, 'info', out);
  expect(format).toBe('pretty');
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  log.child({ request_id: 'req-1', trace_id: traceId }).info({ status: 200 }, 'request');
  await expect.poll(() => text).toContain('request');
  expect(text).toContain(traceId);
  expect(text).toContain('req-1');
  expect(text).not.toContain('logging.googleapis.com');
});
