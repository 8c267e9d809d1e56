import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createAuthenticator, mintDevToken } from './auth';
import { loadConfig } from '../config';
import { DomainError } from '../errors';

const secrets = {
  IDENTITY_SECRET_KEY: 'identity-secret-0123456789',
  SERVICE_AUTH_TOKEN: 'service-token-0123456789',
  AUDIO_URL_SIGNING_KEY: 'audio-signing-key-0123456789',
};
const auth = createAuthenticator(loadConfig({ ...secrets, APP_ENV: 'test' }));
const header = (t: string) => `Bearer ${t}`;

async function outcomeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'accepted';
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
}

describe('auth (development/test: HS256)', () => {
  it('should accept a valid user token and read its claims', async () => {
    const cred = await auth.authenticate(header(await mintDevToken(secrets.IDENTITY_SECRET_KEY, 'alice')), ['bearer']);
    expect(cred).toEqual({
      scheme: 'bearer',
      claims: { identityId: 'dev|alice', email: 'alice@example.test', username: 'alice' },
    });
  });

  it('should reject an expired token with 401', async () => {
    const t = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('x')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(secrets.IDENTITY_SECRET_KEY));
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('unauthorized');
  });

  it('should stop accepting a token it verified once when the token expires', async () => {
    // Verified once, then served from the verified-token cache: the cache must not outlive exp.
    const t = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('soon-expired')
      .setExpirationTime(Math.floor(Date.now() / 1000) + 2)
      .sign(new TextEncoder().encode(secrets.IDENTITY_SECRET_KEY));
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('accepted');
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('accepted');
    await vi.waitFor(
      async () => expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('unauthorized'),
      { timeout: 10_000, interval: 100 },
    );
  });

  it('should reject a token that is not yet valid with 401', async () => {
    const t = await mintDevToken(secrets.IDENTITY_SECRET_KEY, 'bob', {
      notBefore: Math.floor(Date.now() / 1000) + 3600,
    });
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('unauthorized');
  });

  it('should reject a token signed with another key with 401', async () => {
    const t = await mintDevToken('another-secret-0123456789', 'mallory');
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('unauthorized');
  });

  it('should reject alg none with 401', async () => {
    const t = new UnsecuredJWT({ email: 'e@x' }).setSubject('dev|eve').setExpirationTime('1h').encode();
    expect(await outcomeOf(auth.authenticate(header(t), ['bearer']))).toBe('unauthorized');
  });

  it('should reject garbage and missing credentials with 401', async () => {
    expect(await outcomeOf(auth.authenticate(header('not.a.jwt'), ['bearer']))).toBe('unauthorized');
    expect(await outcomeOf(auth.authenticate('Basic abc', ['bearer']))).toBe('unauthorized');
    expect(await outcomeOf(auth.authenticate(undefined, ['bearer']))).toBe('unauthorized');
  });

  it('should accept the service token only where serviceAuth is accepted (403 otherwise)', async () => {
    expect(await auth.authenticate(header(secrets.SERVICE_AUTH_TOKEN), ['service'])).toEqual({ scheme: 'service' });
    expect(await outcomeOf(auth.authenticate(header(secrets.SERVICE_AUTH_TOKEN), ['bearer']))).toBe('forbidden');
    const user = await mintDevToken(secrets.IDENTITY_SECRET_KEY, 'alice');
    expect(await outcomeOf(auth.authenticate(header(user), ['service']))).toBe('forbidden');
    expect(await outcomeOf(auth.authenticate(header(`${secrets.SERVICE_AUTH_TOKEN}x`), ['service']))).toBe(
      'unauthorized',
    );
  });

  it('should reject an HS256 token where asymmetric keys are pinned (staging/production)', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' };
    const server = createServer((_, res) => res.end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
      const prod = createAuthenticator(
        loadConfig({
          ...secrets,
          APP_ENV: 'production',
          IDENTITY_JWKS_URL: url,
          IDENTITY_ISSUER: 'https://id.example',
        }),
      );
      const good = await new SignJWT({ email: 'p@x.test' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setSubject('idp|1')
        .setIssuer('https://id.example')
        .setExpirationTime('1h')
        .sign(privateKey);
      expect(await prod.authenticate(header(good), ['bearer'])).toMatchObject({
        scheme: 'bearer',
        claims: { identityId: 'idp|1' },
      });
      const wrongIssuer = await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setSubject('idp|1')
        .setIssuer('https://evil')
        .setExpirationTime('1h')
        .sign(privateKey);
      expect(await outcomeOf(prod.authenticate(header(wrongIssuer), ['bearer']))).toBe('unauthorized');
      const hs = await mintDevToken(secrets.IDENTITY_SECRET_KEY, 'alice');
      expect(await outcomeOf(prod.authenticate(header(hs), ['bearer']))).toBe('unauthorized');
    } finally {
      server.close();
    }
  });
});
