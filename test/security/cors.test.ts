// CORS as decisions.md section 6 "Browsers" pins it: a listed origin is echoed (never *) on
// every answer, errors included, and preflights answer 204; an unlisted origin gets no CORS header.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mi/lib/config';
import { startApi, TEST_SECRETS, type ApiHarness } from '../harness';

const APP = 'http://localhost:4001';
let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
});
afterAll(() => api?.close());

const corsHeaders = (h: Headers) => [...h.keys()].filter((k) => k.startsWith('access-control-'));

describe('CORS', () => {
  it('should answer a preflight from the app with 204, the methods and every header the app sends', async () => {
    const res = await api.request('OPTIONS', '/meetings', {
      headers: {
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key, x-client-id, traceparent',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-allow-methods')!.split(',')).toEqual(
      expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    );
    const allowed = res.headers
      .get('access-control-allow-headers')!
      .split(',')
      .map((h) => h.trim());
    expect(allowed).toEqual(
      expect.arrayContaining([
        'authorization',
        'content-type',
        'idempotency-key',
        'x-client-id',
        'traceparent',
        'tracestate',
        'content-digest',
      ]),
    );
  });

  it('should echo the origin and expose the headers clients read, on successes and on errors', async () => {
    const ok = await api.request('GET', '/meetings', { token: alice, headers: { origin: APP } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('vary')).toMatch(/origin/i);
    expect(
      ok.headers
        .get('access-control-expose-headers')!
        .split(',')
        .map((h) => h.trim()),
    ).toEqual(expect.arrayContaining(['Idempotent-Replayed', 'Retry-After', 'Location']));
    for (const res of [
      await api.request('GET', '/meetings', { headers: { origin: APP } }),
      await api.request('GET', '/nowhere', { token: alice, headers: { origin: APP } }),
    ]) {
      expect([401, 404]).toContain(res.status);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    }
  });

  it('should give an unlisted origin no CORS header at all', async () => {
    const evil = 'http://evil.example';
    const preflight = await api.request('OPTIONS', '/meetings', {
      headers: { origin: evil, 'access-control-request-method': 'POST' },
    });
    expect(corsHeaders(preflight.headers)).toEqual([]);
    const get = await api.request('GET', '/meetings', { token: alice, headers: { origin: evil } });
    expect(get.status).toBe(200);
    expect(corsHeaders(get.headers)).toEqual([]);
  });

  it('should take its origins from CORS_ALLOWED_ORIGINS, and allow none by default in production', async () => {
    const custom = await startApi({ CORS_ALLOWED_ORIGINS: 'https://app.example.com, https://admin.example.com' });
    try {
      // /healthz answers before any middleware (a probe, not a browser's): a route that runs CORS.
      const res = await custom.request('GET', '/meetings', { headers: { origin: 'https://admin.example.com' } });
      expect(res.headers.get('access-control-allow-origin')).toBe('https://admin.example.com');
      expect(corsHeaders((await custom.request('GET', '/meetings', { headers: { origin: APP } })).headers)).toEqual([]);
    } finally {
      await custom.close();
    }
    const prod = {
      APP_ENV: 'production',
      SERVICE_AUTH_TOKEN: TEST_SECRETS.SERVICE_AUTH_TOKEN,
      AUDIO_URL_SIGNING_KEY: 'a-signing-key-0123456789',
      IDENTITY_JWKS_URL: 'https://id.example/jwks',
      IDENTITY_ISSUER: 'https://id.example',
    };
    expect(loadConfig(prod).CORS_ALLOWED_ORIGINS).toEqual([]);
    expect(() => loadConfig({ ...prod, CORS_ALLOWED_ORIGINS: 'https://app.example.com/path' })).toThrow(
      /CORS_ALLOWED_ORIGINS/,
    );
  });
});
