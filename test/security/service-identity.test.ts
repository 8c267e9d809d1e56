// The ML service's identity (decisions.md section 7, issue 30): Google-signed ID tokens of the ML
// service account, verified with google-auth-library against a local stand-in of Google's
// certificate endpoint (the real one is unreachable here), and the shared token rotating without
// downtime (the previous value accepted while both are configured).
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, importPKCS8 } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, TEST_SECRETS, type ApiHarness } from '../harness';

const ML_ACCOUNT = 'ml-service@project.iam.gserviceaccount.com';
const AUDIENCE = 'https://core.example.test';
const PREVIOUS = 'previous-service-token-0123456789';
const google = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
let certs: Server;
let api: ApiHarness;
let user: string;
let certsUrl: string;

beforeAll(async () => {
  // Google's PEM certificate endpoint's shape: {kid: PEM}.
  const body = JSON.stringify({ 'kid-1': google.publicKey.export({ type: 'spki', format: 'pem' }) });
  certs = createServer(
    (_req, res) =>
      void res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end(body),
  );
  await new Promise<void>((r) => certs.listen(0, '127.0.0.1', r));
  certsUrl = `http://127.0.0.1:${(certs.address() as AddressInfo).port}/oauth2/v1/certs`;
  api = await startApi({
    ML_SERVICE_ACCOUNT_EMAILS: `other@project.iam.gserviceaccount.com, ${ML_ACCOUNT}`,
    SERVICE_ID_TOKEN_AUDIENCE: AUDIENCE,
    GOOGLE_ID_TOKEN_CERTS_URL: certsUrl,
    SERVICE_AUTH_TOKEN_PREVIOUS: PREVIOUS,
  });
  user = await api.token('identity-alice');
});
afterAll(async () => {
  await api?.close();
  certs?.close();
});

async function idToken(
  claims: Record<string, unknown> = {},
  opts: { key?: typeof google; ttl?: number; aud?: string } = {},
) {
  const pem = (opts.key ?? google).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: ML_ACCOUNT, email_verified: true, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'kid-1', typ: 'JWT' })
    .setIssuer('https://accounts.google.com')
    .setAudience(opts.aud ?? AUDIENCE)
    .setSubject('1234567890')
    .setIssuedAt(now - 10)
    .setExpirationTime(now + (opts.ttl ?? 3600))
    .sign(await importPKCS8(pem, 'RS256'));
}

/** A service-only operation: 404 for an unknown transcription means the credential was the service's. */
const asService = (token: string, on = api) =>
  on.request('PATCH', `/transcriptions/${randomUUID()}`, { token, body: { status: 'failed' } });

describe('Google-signed ID tokens of the ML service account', () => {
  it('should take a valid one as the service credential', async () => {
    expect((await asService(await idToken())).status).toBe(404);
  });

  it('should refuse (401) a wrong audience, another account, an unverified email, an expired token or a foreign signature', async () => {
    const refused = [
      await idToken({}, { aud: 'https://elsewhere.example.test' }),
      await idToken({ email: 'intruder@project.iam.gserviceaccount.com' }),
      await idToken({ email_verified: false }),
      await idToken({}, { ttl: -600 }),
      await idToken({}, { key: stranger }),
    ];
    for (const token of refused) expect((await asService(token)).status).toBe(401);
  });

  it('should leave user tokens as they are: a user is not the service (403), and an ID token is not a user', async () => {
    expect((await asService(user)).status).toBe(403);
    expect((await api.request('GET', '/me', { token: await idToken() })).status).toBe(403);
  });
});

describe('shared token rotation', () => {
  it('should accept the current and the previous token while both are configured, and nothing else', async () => {
    expect((await asService(api.serviceToken)).status).toBe(404);
    expect((await asService(PREVIOUS)).status).toBe(404);
    expect((await asService('not-the-service-token-0123456789')).status).toBe(401);
  });
});

describe('staging and production', () => {
  const cloud = (env: Record<string, string>) =>
    startApi({
      APP_ENV: 'staging',
      AUDIO_URL_SIGNING_KEY: 'a-signing-key-0123456789',
      IDENTITY_JWKS_URL: 'https://id.example.test/jwks',
      IDENTITY_ISSUER: 'https://id.example.test',
      SERVICE_ID_TOKEN_AUDIENCE: AUDIENCE,
      GOOGLE_ID_TOKEN_CERTS_URL: certsUrl,
      SERVICE_AUTH_TOKEN_PREVIOUS: PREVIOUS,
      ...env,
    });

  it('should take only the ID token with an ML service account configured: the shared token is 401, saying why', async () => {
    const staging = await cloud({ ML_SERVICE_ACCOUNT_EMAILS: ML_ACCOUNT });
    try {
      expect((await asService(await idToken(), staging)).status).toBe(404);
      for (const shared of [TEST_SECRETS.SERVICE_AUTH_TOKEN, PREVIOUS]) {
        const res = await asService(shared, staging);
        expect(res.status).toBe(401);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.body.detail).toMatch(
          /shared service token is not accepted when APP_ENV=staging.*ID token.*ML_SERVICE_ACCOUNT_EMAILS/,
        );
      }
    } finally {
      await staging.close();
    }
  });

  it('should keep the shared token (and its previous value) where no ML service account is configured', async () => {
    const staging = await cloud({});
    try {
      expect((await asService(TEST_SECRETS.SERVICE_AUTH_TOKEN, staging)).status).toBe(404);
      expect((await asService(PREVIOUS, staging)).status).toBe(404);
    } finally {
      await staging.close();
    }
  });
});
