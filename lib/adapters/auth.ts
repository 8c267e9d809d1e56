// Authentication exactly as decisions.md section 2: bearerAuth is a user JWT (HS256 with
// IDENTITY_SECRET_KEY in development/test, JWKS in staging/production), serviceAuth is the
// SERVICE_AUTH_TOKEN compared in constant time (or SERVICE_AUTH_TOKEN_PREVIOUS while a rotation
// lasts), or a Google-signed ID token of an ML service account (ML_SERVICE_ACCOUNT_EMAILS, checked
// by google-auth-library). In staging/production with ML_SERVICE_ACCOUNT_EMAILS set, only the ID
// token is: the shared token is refused (401) so a leaked copy cannot act as the service.
// Missing/invalid → 401; the wrong scheme → 403.
import { createHash, timingSafeEqual } from 'node:crypto';
import { OAuth2Client } from 'google-auth-library';
import { createRemoteJWKSet, decodeJwt, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config';
import { DomainError } from '../errors';

export type Scheme = 'bearer' | 'service';

export interface UserClaims {
  identityId: string;
  /** null when the token carries no email: the stored one stays (decisions.md section 7). */
  email: string | null;
  username: string;
}

export type Credential = { scheme: 'service' } | { scheme: 'bearer'; claims: UserClaims };

const HS_ALGS = ['HS256'];
const ASYMMETRIC_ALGS = ['RS256', 'ES256', 'EdDSA'];

function digest(s: string) {
  return createHash('sha256').update(s).digest();
}

/** Constant-time token comparison (hashing first equalises lengths). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export function bearerToken(header: string | undefined | null): string | null {
  const m = /^Bearer +([^\s]+)\s*$/i.exec(header ?? '');
  return m ? m[1] : null;
}

export interface Authenticator {
  /** Verifies a raw token; throws 401 DomainError. */
  verify(token: string): Promise<Credential>;
  /** Verifies and checks the scheme against what the operation accepts (403 otherwise). */
  authenticate(header: string | undefined | null, accepts: readonly Scheme[]): Promise<Credential>;
}

const MAX_CLOCK_SKEW_SECONDS = 60;
// A client sends the same user token on every request until it expires: its signature is checked
// once and its claims kept until its exp, and for at most this long (a key the JWKS withdraws
// stops its tokens within it). Only accepted tokens are kept; memory is bounded by the count.
const VERIFIED_TOKEN_MAX_MS = 5 * 60_000;
const VERIFIED_TOKENS_MAX = 10_000;
/** A subject of nothing visible (whitespace, control and format characters such as U+200B). */
const INVISIBLE = /^[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]*$/u;

export function createAuthenticator(config: Config): Authenticator {
  const local = config.APP_ENV === 'development' || config.APP_ENV === 'test';
  const key: Uint8Array | JWTVerifyGetKey = local
    ? new TextEncoder().encode(config.IDENTITY_SECRET_KEY)
    : createRemoteJWKSet(new URL(config.IDENTITY_JWKS_URL!));

  const verified = new LRUCache<string, UserClaims>({ max: VERIFIED_TOKENS_MAX, ttl: VERIFIED_TOKEN_MAX_MS });

  async function verifyJwtOnce(token: string): Promise<UserClaims> {
    const known = verified.get(token);
    if (known) return known;
    const { claims, exp } = await verifyJwt(token);
    // At least 1 ms: a ttl of 0 would keep the entry for good.
    verified.set(token, claims, { ttl: Math.max(1, Math.min(exp * 1000 - Date.now(), VERIFIED_TOKEN_MAX_MS)) });
    return claims;
  }

  async function verifyJwt(token: string): Promise<{ claims: UserClaims; exp: number }> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key as never, {
        algorithms: local ? HS_ALGS : ASYMMETRIC_ALGS,
        issuer: local ? undefined : config.IDENTITY_ISSUER,
        audience: config.IDENTITY_AUDIENCE,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch {
      throw new DomainError('unauthorized', 'invalid or expired credentials');
    }
    // An identity needs a name, and a token cannot be issued in the future (60 s of clock skew) nor
    // before the epoch (no issuer writes a negative iat: such a token is forged or broken).
    const sub = payload.sub!;
    if (typeof sub !== 'string' || INVISIBLE.test(sub))
      throw new DomainError('unauthorized', 'invalid credentials: the token names no subject');
    if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + MAX_CLOCK_SKEW_SECONDS) {
      throw new DomainError('unauthorized', 'invalid credentials: the token was issued in the future');
    }
    if (typeof payload.iat === 'number' && payload.iat < 0) {
      throw new DomainError('unauthorized', 'invalid credentials: the token has a negative issue time');
    }
    const name = [payload.username, payload.name, payload.preferred_username].find((v) => typeof v === 'string' && v) as
      | string
      | undefined;
    const email = typeof payload.email === 'string' && payload.email.trim() ? payload.email.trim() : null;
    const claims = { identityId: sub, email, username: name ?? (email ? email.split('@')[0] : sub) };
    return { claims, exp: payload.exp! };
  }

  const sharedTokens = [config.SERVICE_AUTH_TOKEN, config.SERVICE_AUTH_TOKEN_PREVIOUS].filter((t): t is string => !!t);
  const verifyServiceIdToken = googleIdTokenVerifier(config);
  const idTokensOnly = !local && verifyServiceIdToken !== null;

  async function verify(token: string): Promise<Credential> {
    // Every shared token is compared, so the time taken does not say which one matched.
    if (sharedTokens.map((t) => safeEqual(token, t)).includes(true)) {
      if (idTokensOnly) {
        throw new DomainError(
          'unauthorized',
          `the shared service token is not accepted when APP_ENV=${config.APP_ENV}: authenticate with a ` +
            'Google-signed ID token of an ML service account (ML_SERVICE_ACCOUNT_EMAILS), audience the core URL',
        );
      }
      return { scheme: 'service' };
    }
    if (verifyServiceIdToken && issuerOf(token) !== undefined && GOOGLE_ISSUERS.includes(issuerOf(token)!)) {
      await verifyServiceIdToken(token);
      return { scheme: 'service' };
    }
    return { scheme: 'bearer', claims: await verifyJwtOnce(token) };
  }

  return {
    verify,
    async authenticate(header, accepts) {
      const token = bearerToken(header);
      if (!token) throw new DomainError('unauthorized', 'missing credentials: send Authorization: Bearer <token>');
      const cred = await verify(token);
      if (!accepts.includes(cred.scheme)) {
        throw new DomainError(
          'forbidden',
          `this operation does not accept ${cred.scheme === 'service' ? 'service' : 'user'} credentials`,
        );
      }
      return cred;
    },
  };
}

const GOOGLE_ISSUERS = ['accounts.google.com', 'https://accounts.google.com'];

function issuerOf(token: string): string | undefined {
  try {
    return decodeJwt(token).iss;
  } catch {
    return undefined;
  }
}

/**
 * The ML service's identity in staging/production: a Google-signed ID token (signature against
 * Google's certificates, issuer, expiry, audience: the core's URL) of one of ML_SERVICE_ACCOUNT_EMAILS,
 * email verified. Null when no ML service account is configured. Throws 401 otherwise.
 */
function googleIdTokenVerifier(config: Config): ((token: string) => Promise<void>) | null {
  const accounts = config.ML_SERVICE_ACCOUNT_EMAILS;
  const audience = config.SERVICE_ID_TOKEN_AUDIENCE ?? config.PUBLIC_BASE_URL;
  if (!accounts.length) return null;
  const client = new OAuth2Client({
    endpoints: { oauth2FederatedSignonPemCertsUrl: config.GOOGLE_ID_TOKEN_CERTS_URL },
  });
  return async (token) => {
    let email: string | undefined;
    try {
      const payload = (await client.verifyIdToken({ idToken: token, audience })).getPayload();
      email = payload?.email_verified ? payload.email : undefined;
    } catch {
      throw new DomainError('unauthorized', 'invalid or expired service identity token');
    }
    if (!email || !accounts.includes(email))
      throw new DomainError('unauthorized', 'the identity token is not of an ML service account');
  };
}

/** Development/test user token signed with IDENTITY_SECRET_KEY (`npm run token -- alice`). */
export async function mintDevToken(
  secret: string,
  name: string,
  opts: { ttlSeconds?: number; email?: string; notBefore?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ email: opts.email ?? `${name}@example.test`, username: name })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(`dev|${name}`)
    .setIssuedAt(now)
    .setExpirationTime(now + (opts.ttlSeconds ?? 12 * 3600));
  if (opts.notBefore) jwt.setNotBefore(opts.notBefore);
  return jwt.sign(new TextEncoder().encode(secret));
}
