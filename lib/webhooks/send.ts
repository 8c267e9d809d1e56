// One delivery attempt, per the Standard Webhooks specification: POST of the event's JSON with
// webhook-id, webhook-timestamp and webhook-signature (signed by the specification's own library).
// Safety (decisions.md section 7): where addresses are checked, the host is resolved, every
// address checked, and the socket connects to a checked address (the request's `lookup` hands
// out only those), so a rebinding DNS answer cannot slip a private address in between. No
// redirect is followed (node:http never does); the whole attempt, name resolution included, is
// bounded by the timeout and at most MAX_RESPONSE_BYTES of the answer are read. While a rotated
// secret's overlap lasts, the request carries one signature per secret (space-separated), which
// any Standard Webhooks verifier accepts when one of them matches its secret.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { checksAddresses, hostOf, resolvePublic, urlFormProblem, type AppEnv, type Resolve } from './address';

export const ATTEMPT_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptResult {
  /** The receiver's HTTP status; null when it did not answer. */
  status_code: number | null;
  /** Why there was no answer; null when there was one. */
  error: string | null;
  duration_ms: number;
}

export interface SendOptions {
  env: AppEnv;
  resolve: Resolve;
  timeoutMs?: number;
}

export const succeeded = (r: AttemptResult) => r.status_code !== null && r.status_code >= 200 && r.status_code < 300;

export async function sendWebhook(
  target: { url: string; secrets: string[] },
  message: { id: string; body: string },
  opts: SendOptions,
): Promise<AttemptResult> {
  const started = performance.now();
  const timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const done = (status_code: number | null, error: string | null): AttemptResult => ({
    status_code,
    error,
    duration_ms: Math.round(performance.now() - started),
  });
  const tooLate = `no answer within ${timeoutMs / 1000} s`;
  // One timer for the whole attempt, started before name resolution: a resolver that never
  // answers ends the attempt at the timeout like a receiver that never answers.
  let expire: () => void = () => undefined;
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    expire();
  }, timeoutMs);
  try {
    const form = urlFormProblem(target.url, opts.env);
    if (form) return done(null, form);
    const url = new URL(target.url);
    let lookup: LookupFunction | undefined;
    if (checksAddresses(opts.env)) {
      const checked = await new Promise<Awaited<ReturnType<typeof resolvePublic>> | null>((resolve, reject) => {
        expire = () => resolve(null);
        resolvePublic(hostOf(url), opts.resolve).then(resolve, reject);
      });
      if (!checked) return done(null, `${tooLate} (resolving ${hostOf(url)})`);
      if ('problem' in checked) return done(null, checked.problem);
      const addresses = checked.addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
      lookup = (_host, options, callback) => {
        if (options.all) (callback as (e: null, a: typeof addresses) => void)(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      };
    }
    if (expired) return done(null, tooLate);
    const timestamp = new Date();
    const signature = target.secrets
      .map((secret) => new Webhook(secret).sign(message.id, timestamp, message.body))
      .join(' ');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'meeting-intelligence-webhooks/1',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signature,
    };
    return await new Promise<AttemptResult>((resolve) => {
      let settled = false;
      const finish = (status: number | null, error: string | null) => {
        if (settled) return;
        settled = true;
        req.destroy();
        resolve(done(status, error));
      };
      const request = url.protocol === 'https:' ? https.request : http.request;
      const req = request(url, { method: 'POST', headers, lookup, agent: false }, (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_RESPONSE_BYTES) finish(res.statusCode ?? null, null);
        });
        res.on('end', () => finish(res.statusCode ?? null, null));
        res.on('error', () => finish(res.statusCode ?? null, null));
      });
      expire = () => finish(null, tooLate);
      req.on('error', (err: NodeJS.ErrnoException) => finish(null, `request failed: ${err.code ?? err.message}`));
      req.end(message.body);
    });
  } finally {
    clearTimeout(timer);
  }
}
