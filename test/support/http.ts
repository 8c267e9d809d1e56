// A plain node:http client, one connection per request: exact headers and bodies, no pooled
// keep-alive socket that an earlier test case could have left half-read.
import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export function rawRequest(
  baseUrl: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array; timeoutMs?: number } = {},
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  // Framed by Content-Length (node does not chunk GET/DELETE bodies, so they would run into the next request).
  const headers = { ...opts.headers };
  if (opts.body !== undefined && !Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h))) {
    headers['content-length'] = String(
      typeof opts.body === 'string' ? Buffer.byteLength(opts.body) : opts.body.byteLength,
    );
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: opts.method ?? 'GET',
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(opts.timeoutMs ?? 30_000, () => req.destroy(new Error('timed out waiting for the response')));
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface StreamOutcome {
  status: number;
  text: string;
  /** Body bytes written before the answer came. */
  sent: number;
  /** Milliseconds from the request start to the answer. */
  ms: number;
}

/**
 * Sends a body that never ends (chunks until an answer arrives) and reports the answer. With
 * `declaredLength` the request says Content-Length; without it the body is chunked. Fails when
 * `maxBytes` went out without an answer: the server was reading the body whole.
 */
export function streamUntilAnswered(
  baseUrl: string,
  path: string,
  opts: {
    method: string;
    headers: Record<string, string>;
    declaredLength?: number;
    chunkBytes?: number;
    maxBytes: number;
    timeoutMs?: number;
  },
): Promise<StreamOutcome> {
  const url = new URL(path, baseUrl);
  const headers = {
    ...opts.headers,
    ...(opts.declaredLength !== undefined
      ? { 'content-length': String(opts.declaredLength) }
      : { 'transfer-encoding': 'chunked' }),
  };
  const chunk = Buffer.alloc(opts.chunkBytes ?? 16 * 1024, 0x20); // spaces: valid JSON whitespace
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: opts.method,
      headers,
      agent: false,
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${opts.timeoutMs ?? 15_000} ms after ${sent} bytes`));
    }, opts.timeoutMs ?? 15_000);
    req.on('response', (res) => {
      answered = true;
      const ms = performance.now() - started;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      const done = () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), sent, ms });
      };
      res.on('end', done);
      res.on('error', done);
    });
    req.on('error', (err) => {
      if (!answered) {
        clearTimeout(timer);
        reject(err);
      }
    });
    // Paced (one chunk per timer tick) so loopback socket buffers do not swallow megabytes
    // before the server has had a chance to answer.
    const pump = () => {
      if (answered || req.destroyed) return;
      if (sent >= opts.maxBytes) {
        clearTimeout(timer);
        req.destroy();
        return reject(new Error(`${sent} bytes sent without an answer: the body is being read whole`));
      }
      sent += chunk.length;
      if (req.write(chunk)) setTimeout(pump, 1);
      else req.once('drain', pump);
    };
    req.flushHeaders();
    pump();
  });
}
