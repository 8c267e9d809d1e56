// Identities (decisions.md section 6): emails are unique case-insensitively; a valid token whose
// email another identity holds answers 409 account_conflict on REST and closes the WebSocket
// with 4409; an empty `sub`, an `iat` more than 60 s ahead or a negative `iat` is 401 (4401 on
// the WebSocket); no problem detail names a constraint.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { TEST_SECRETS } from '../harness';
import { TestClient, useInstance } from '../live/helpers';

const live = useInstance();

/** A token as an identity provider would sign it, with the claims given. */
async function jwt(claims: { sub?: string; email?: string; iat?: number }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const token = new SignJWT({ email: claims.email, username: 'someone' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt(claims.iat ?? now)
    .setExpirationTime(now + 600);
  if (claims.sub !== undefined) token.setSubject(claims.sub);
  return token.sign(new TextEncoder().encode(TEST_SECRETS.IDENTITY_SECRET_KEY));
}

const me = async (token: string) => {
  const res = await fetch(`${live.instance.url}/me`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as any };
};

describe('identities', () => {
  it('should refuse a new identity with an existing email, in any case, on every call and on the WebSocket', async () => {
    const email = `dana-${randomUUID().slice(0, 6)}@example.test`;
    const first = await me(await jwt({ sub: `idp|${randomUUID()}`, email }));
    expect(first.status).toBe(200);
    for (const other of [email, email.toUpperCase()]) {
      const token = await jwt({ sub: `idp|${randomUUID()}`, email: other });
      for (let i = 0; i < 2; i++) {
        const res = await me(token);
        expect(res.status).toBe(409);
        expect(res.body.type).toMatch(/\/account_conflict$/);
        expect(res.body.detail).not.toMatch(/_key|_check|_fkey|constraint|app_user/);
      }
      const ws = await TestClient.open(live.instance.wsUrl);
      ws.send({ type: 'hello', token, client_id: randomUUID() });
      expect((await ws.closed).code).toBe(4409);
      expect(ws.ofType('ready')).toEqual([]);
    }
    const count = await live.database.db.query(
      'test.users',
      'SELECT count(*)::int AS n FROM app_user WHERE lower(email) = lower($1)',
      [email],
    );
    expect(count.rows[0].n).toBe(1);
  });

  it('should keep one account when the same identity signs in with its email in another case', async () => {
    const sub = `idp|${randomUUID()}`;
    const email = `erin-${randomUUID().slice(0, 6)}@example.test`;
    const a = await me(await jwt({ sub, email }));
    const b = await me(await jwt({ sub, email: email.toUpperCase() }));
    expect(b.status).toBe(200);
    expect(b.body.id).toBe(a.body.id);
    expect(b.body.email).toBe(email.toUpperCase());
  });

  it('should answer 401 to a token with an empty or missing sub, or issued more than 60 s in the future', async () => {
    const now = Math.floor(Date.now() / 1000);
    const invisible = ['\u200b', ' \u200b\u200d ', '\ufeff', '\u2060\u00ad', '\t\u3000'];
    for (const claims of [
      { sub: '', email: 'x@example.test' },
      { email: 'y@example.test' },
      { sub: ' ', email: 'z@example.test' },
      ...invisible.map((sub) => ({ sub, email: `${randomUUID()}@example.test` })),
      { sub: `idp|${randomUUID()}`, iat: now + 120 },
    ]) {
      const res = await me(await jwt(claims));
      expect(res.status, JSON.stringify(claims)).toBe(401);
    }
    expect((await me(await jwt({ sub: `idp|${randomUUID()}`, iat: now + 30 }))).status).toBe(200); // within the clock skew
    const ws = await TestClient.open(live.instance.wsUrl);
    ws.send({ type: 'hello', token: await jwt({ sub: '' }), client_id: randomUUID() });
    expect((await ws.closed).code).toBe(4401);
  });

  it('should answer 401 on REST and close the WebSocket with 4401 for a token with a negative iat', async () => {
    for (const iat of [-1, -86_400]) {
      const token = await jwt({ sub: `idp|${randomUUID()}`, iat });
      const res = await me(token);
      expect(res.status, String(iat)).toBe(401);
      expect(res.body.type).toMatch(/\/unauthorized$/);
      const ws = await TestClient.open(live.instance.wsUrl);
      ws.send({ type: 'hello', token, client_id: randomUUID() });
      expect((await ws.closed).code).toBe(4401);
      expect(ws.ofType('ready')).toEqual([]);
    }
    // The epoch itself is a time like any other.
    expect((await me(await jwt({ sub: `idp|${randomUUID()}`, iat: 0 }))).status).toBe(200);
  });

  it('should keep the stored email when a token carries none, so no other identity can take it', async () => {
    const sub = `idp|${randomUUID()}`;
    const email = `gail-${randomUUID().slice(0, 6)}@example.test`;
    const first = await me(await jwt({ sub, email }));
    expect(first.body.email).toBe(email);
    const without = await me(await jwt({ sub }));
    expect(without.status).toBe(200);
    expect(without.body).toMatchObject({ id: first.body.id, email });
    const thief = await me(await jwt({ sub: `idp|${randomUUID()}`, email }));
    expect(thief.status).toBe(409);
    expect((await me(await jwt({ sub, email }))).status).toBe(200);
    // A new identity without an email gets an address of its own, and a second one too.
    const a = await me(await jwt({ sub: `idp|${randomUUID()}` }));
    const b = await me(await jwt({ sub: `idp|${randomUUID()}` }));
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.email).not.toBe(b.body.email);
  });

  it('should compare emails NFKC-normalised, trimmed and lower-cased: a look-alike is 409', async () => {
    const local = `hank${randomUUID().slice(0, 6)}`;
    const email = `${local}@example.test`;
    expect((await me(await jwt({ sub: `idp|${randomUUID()}`, email }))).status).toBe(200);
    // Full-width letters (U+FF41…) normalise to ASCII under NFKC.
    const fullWidth = [...local]
      .map((ch) => (/[a-z0-9]/.test(ch) ? String.fromCodePoint(ch.codePointAt(0)! + 0xfee0) : ch))
      .join('');
    for (const lookAlike of [
      `${email} `,
      ` ${email}`,
      `${email}\u3000`,
      `${fullWidth}@example.test`,
      `${fullWidth.toUpperCase()}@ＥＸＡＭＰＬＥ.test`,
    ]) {
      const res = await me(await jwt({ sub: `idp|${randomUUID()}`, email: lookAlike }));
      expect(res.status, JSON.stringify(lookAlike)).toBe(409);
      expect(res.body.type).toMatch(/\/account_conflict$/);
    }
    const count = await live.database.db.query(
      'test.users',
      `SELECT count(*)::int AS n FROM app_user WHERE lower(normalize(email, NFKC)) LIKE $1`,
      [`%${local}%`],
    );
    expect(count.rows[0].n).toBe(1);
  });

  it('should name fields, never constraints, in the details of conflicts and bad references', async () => {
    const token = await jwt({ sub: `idp|${randomUUID()}`, email: `f-${randomUUID().slice(0, 6)}@example.test` });
    const post = (path: string, body: unknown) =>
      fetch(`${live.instance.url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect((await post('/people', { display_name: 'Frank' })).status).toBe(201);
    const dup = await post('/people', { display_name: 'Frank' });
    expect(dup.status).toBe(409);
    expect(dup.body.detail).toBe('a record with this display_name already exists');
    expect((await post('/tags', { name: 'x' })).status).toBe(201);
    const tag = await post('/tags', { name: 'x' });
    expect(tag.status).toBe(409);
    expect(tag.body.detail).toBe('a record with this name already exists');
  });
});
