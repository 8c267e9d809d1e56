// The credential of the core's calls to the ML service (lib/adapters/ml-credential.ts, decisions.md
// section 8): in production a Google-signed ID token whose audience is the ML service's URL, from
// the metadata server (a local stand-in of it answering as Cloud Run's does: we do not own it); in
// development the shared token.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '@mi/lib/config';
import { mlAuthorization } from '@mi/lib/adapters/ml-credential';

const ML_URL = 'https://ml.example.test';
let metadata: Server;
const asked: { audience: string | null; flavor: string | undefined }[] = [];
const saved = { ...process.env };

/** An ID token as the metadata server answers it: a JWT whose payload names the audience and expiry. */
const idToken = (audience: string) =>
  [
    { alg: 'RS256', typ: 'JWT' },
    { aud: audience, iss: 'https://accounts.google.com', exp: Math.floor(Date.now() / 1000) + 3600 },
  ]
    .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url'))
    .concat('signature')
    .join('.');

beforeAll(async () => {
  metadata = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://metadata');
    if (url.pathname !== '/computeMetadata/v1/instance/service-accounts/default/identity')
      return void res.writeHead(404).end();
    const audience = url.searchParams.get('audience');
    asked.push({ audience, flavor: req.headers['metadata-flavor'] as string | undefined });
    res.writeHead(200, { 'content-type': 'text/plain', 'metadata-flavor': 'Google' }).end(idToken(audience ?? ''));
  });
  await new Promise<void>((r) => metadata.listen(0, '127.0.0.1', r));
  process.env.GCE_METADATA_HOST = `127.0.0.1:${(metadata.address() as AddressInfo).port}`;
  process.env.METADATA_SERVER_DETECTION = 'assume-present';
  delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
});
afterAll(async () => {
  process.env = saved;
  await new Promise((r) => metadata?.close(r));
});

const config = (appEnv: Config['APP_ENV']) =>
  ({ APP_ENV: appEnv, ML_SERVICE_URL: ML_URL, SERVICE_AUTH_TOKEN: 's'.repeat(32) }) as Config;

describe("the core's credential to the ML service", () => {
  it('should be a Google ID token with audience the ML URL in production, fetched once and reused', async () => {
    const authorization = mlAuthorization(config('production'));
    const header = await authorization();
    expect(header).toMatch(/^Bearer [\w-]+\.[\w-]+\.signature$/);
    const [, payload] = header.slice('Bearer '.length).split('.');
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toMatchObject({ aud: ML_URL });
    expect(asked).toEqual([{ audience: ML_URL, flavor: 'Google' }]);
    expect(await authorization()).toBe(header);
    expect(asked).toHaveLength(1);
  });

  it('should be the shared token in development and tests', async () => {
    for (const env of ['development', 'test'] as const)
      expect(await mlAuthorization(config(env))()).toBe(`Bearer ${'s'.repeat(32)}`);
    expect(asked).toHaveLength(1);
  });
});
