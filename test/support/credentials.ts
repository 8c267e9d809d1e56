// Credentials that must be refused: malformed, forged, tampered, expired, not yet valid.
import { mintDevToken } from '@mi/lib/adapters/auth';

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** Authorization header values that are not valid credentials (401 everywhere). */
export async function badCredentials(
  secret: string,
  serviceToken: string,
  validUserToken: string,
): Promise<Record<string, string>> {
  const [header, , signature] = validUserToken.split('.');
  const now = Math.floor(Date.now() / 1000);
  const forgedPayload = b64url({
    sub: 'dev|mallory',
    email: 'mallory@example.test',
    username: 'mallory',
    iat: now,
    exp: now + 3600,
  });
  return {
    'not a JWT': 'Bearer not-a-jwt',
    'signed with another key': `Bearer ${await mintDevToken(`${secret}-other`, 'mallory')}`,
    'alg none': `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${forgedPayload}.`,
    'payload swapped under a valid signature': `Bearer ${header}.${forgedPayload}.${signature}`,
    'service token off by one character': `Bearer ${serviceToken.slice(0, -1)}${serviceToken.endsWith('x') ? 'y' : 'x'}`,
    'Basic scheme': `Basic ${Buffer.from('owner:password').toString('base64')}`,
    'empty bearer': 'Bearer ',
  };
}

/** Correctly signed user tokens outside their validity window (401 everywhere). */
export async function expiredCredentials(secret: string, name: string): Promise<Record<string, string>> {
  return {
    expired: `Bearer ${await mintDevToken(secret, name, { ttlSeconds: -60 })}`,
    'not yet valid (nbf)': `Bearer ${await mintDevToken(secret, name, { notBefore: Math.floor(Date.now() / 1000) + 3600 })}`,
  };
}
