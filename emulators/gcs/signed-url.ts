// Verification of V4 signed URLs (GOOG4-RSA-SHA256), rebuilt the way Cloud Storage does:
// canonical request → string to sign → RSA-SHA256 with the public key of the credential.
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

export interface TrustedKey {
  client_email: string;
  public_key_pem: string;
}

export type SignedUrlCheck =
  | { ok: true }
  | { ok: false; status: number; code: string; message: string; details: string };

const SEVEN_DAYS = 7 * 24 * 3600;

// Everything but A-Z a-z 0-9 - . _ ~ is percent-encoded, as the client does when signing.
const strictEncode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function isSignedUrlRequest(rawQuery: string): boolean {
  return /(^|&)X-Goog-Signature=/i.test(rawQuery);
}

/** Query pairs as sent, percent-decoded ('+' is not a space in signed URLs). */
function parseQuery(rawQuery: string): [string, string][] {
  return rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const i = pair.indexOf('=');
      const [k, v] = i < 0 ? [pair, ''] : [pair.slice(0, i), pair.slice(i + 1)];
      return [decodeURIComponent(k), decodeURIComponent(v)];
    });
}

function parseGoogDate(s: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) : undefined;
}

export class SignedUrlVerifier {
  private readonly keys = new Map<string, KeyObject>();

  trust(key: TrustedKey): void {
    this.keys.set(key.client_email, createPublicKey(key.public_key_pem));
  }

  check(
    req: { method: string; rawPath: string; rawQuery: string; headers: Record<string, string | string[] | undefined> },
    now = Date.now(),
  ): SignedUrlCheck {
    const fail = (status: number, code: string, message: string, details: string): SignedUrlCheck => ({
      ok: false,
      status,
      code,
      message,
      details,
    });
    let query: [string, string][];
    try {
      query = parseQuery(req.rawQuery);
    } catch {
      return fail(400, 'InvalidArgument', 'Invalid argument.', 'Malformed query string.');
    }
    const param = (name: string) => query.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
    const algorithm = param('X-Goog-Algorithm');
    const credential = param('X-Goog-Credential') ?? '';
    const dateStr = param('X-Goog-Date') ?? '';
    const expiresStr = param('X-Goog-Expires') ?? '';
    const signedHeaders = param('X-Goog-SignedHeaders') ?? '';
    const signature = param('X-Goog-Signature') ?? '';

    if (algorithm !== 'GOOG4-RSA-SHA256')
      return fail(400, 'InvalidArgument', 'Invalid argument.', `Unsupported X-Goog-Algorithm: ${algorithm ?? ''}`);
    const date = parseGoogDate(dateStr);
    const expires = Number(expiresStr);
    if (date === undefined || !/^\d+$/.test(expiresStr) || expires < 1 || expires > SEVEN_DAYS) {
      return fail(400, 'InvalidArgument', 'Invalid argument.', 'X-Goog-Date or X-Goog-Expires is malformed.');
    }
    const [email, ...scopeParts] = credential.split('/');
    const scope = scopeParts.join('/');
    if (
      scopeParts.length !== 4 ||
      scopeParts[0] !== dateStr.slice(0, 8) ||
      scopeParts[2] !== 'storage' ||
      scopeParts[3] !== 'goog4_request'
    ) {
      return fail(
        400,
        'AuthorizationQueryParametersError',
        'Error parsing the X-Goog-Credential parameter.',
        `Credential: ${credential}`,
      );
    }
    if (now >= date + expires * 1000)
      return fail(
        400,
        'ExpiredToken',
        'Invalid argument.',
        `Request has expired: ${Math.floor((date + expires * 1000) / 1000)}`,
      );
    if (now + 60_000 < date) return fail(400, 'InvalidArgument', 'Invalid argument.', 'Request is not valid yet.');
    const key = this.keys.get(email);
    if (!key) return fail(403, 'AccessDenied', 'Access denied.', `Unknown signing credential ${email}.`);

    const canonicalPath = req.rawPath
      .split('/')
      .map((seg) => strictEncode(decodeURIComponent(seg)))
      .join('/');
    const canonicalQuery = query
      .filter(([k]) => k !== 'X-Goog-Signature')
      .map(([k, v]) => [strictEncode(k), strictEncode(v)])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const headerNames = signedHeaders.split(';').filter(Boolean);
    const canonicalHeaders = headerNames
      .map((name) => {
        const raw = req.headers[name];
        let value = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
        // The client signs the endpoint's hostname without its port.
        if (name === 'host') value = value.replace(/:\d+$/, '');
        return `${name}:${value.trim().replace(/\s{2,}/g, ' ')}\n`;
      })
      .join('');
    const payloadHash = headerNames.includes('x-goog-content-sha256')
      ? String(req.headers['x-goog-content-sha256'])
      : 'UNSIGNED-PAYLOAD';
    const canonicalRequest = [
      req.method,
      canonicalPath,
      canonicalQuery,
      canonicalHeaders,
      signedHeaders,
      payloadHash,
    ].join('\n');
    const stringToSign = [
      'GOOG4-RSA-SHA256',
      dateStr,
      scope,
      createHash('sha256').update(canonicalRequest).digest('hex'),
    ].join('\n');

    const valid =
      /^[0-9a-f]+$/i.test(signature) &&
      verify('RSA-SHA256', Buffer.from(stringToSign), key, Buffer.from(signature, 'hex'));
    if (!valid) {
      return fail(
        403,
        'SignatureDoesNotMatch',
        'Access denied.',
        `The request signature we calculated does not match the signature you provided. StringToSign: ${stringToSign}`,
      );
    }
    return { ok: true };
  }
}
