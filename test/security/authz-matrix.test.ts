// Authorization matrix generated from GET /openapi.json: every operation × {no credentials,
// bad tokens, expired tokens, other user's token on the owner's records, other user's records
// with the owner's ids in the body, wrong scheme, owner}. The expected answer of each cell comes
// from the generic rule of decisions.md section 2 or from EXCEPTIONS below; an operation for
// which neither can be derived (no credentials and not listed, a path parameter or body
// reference without a fixture) fails, so a new endpoint cannot go unchecked. Every refused
// request must leave the stored data unchanged; the owner's identical request must succeed.
import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestResponse } from '../harness';
import { badCredentials, expiredCredentials } from '../support/credentials';
import { changedTables, snapshotter, type Snapshot } from '../support/db-snapshot';
import {
  buildRequest,
  createFixtures,
  createWorld,
  RAW_SAMPLE,
  referencedResources,
  send,
  type Ids,
  type World,
} from '../support/fixtures';
import { fetchDoc, type Operation } from '../support/openapi';

type Column = 'none' | 'bad' | 'expired' | 'other' | 'crossRef' | 'wrongScheme' | 'owner';
/** A status, 'own' (2xx and none of the owner's ids in the answer), or 'n/a'. */
type Expectation = number | 'own' | 'n/a';

/** Operations that take no Authorization header; each has its own scheme, tested elsewhere. */
const UNAUTHENTICATED: Record<string, string> = {
  'GET /meetings/{id}/audio': 'proxy audio link, signed per user (tested below)',
  'GET /healthz': 'health check',
  'GET /openapi.json': 'the document itself',
};

/** Where the generic rule does not fit: the cells that differ, and why. Keep it short. */
const EXCEPTIONS: Record<string, { expect: Partial<Record<Column, Expectation>>; why: string }> = {
  mergePerson: {
    expect: { crossRef: 404 },
    why: "decisions.md section 7: another user's person in a merge is 404, the body's too",
  },
};

/** POSTs that delete a record they name: the owner's request runs on a fresh set of records. */
const DESTRUCTIVE_POSTS: Record<string, string> = {
  mergePerson: 'deletes the person named in the body',
};

/**
 * Operations on the calling account itself: their cells that succeed ('own') run as a throwaway
 * user of their own, so that the matrix's owner and other user live on. Their refusals are
 * checked as any other operation's.
 */
const ON_CALLER: Record<string, string> = {
  deleteMe: 'erases the calling account (in full: test/api/erasure.test.ts)',
  createAccountExport: 'one unfinished export per account (in full: test/api/account-export.test.ts)',
};

const api = await startApi();
const doc = await fetchDoc(api);
let world: World;
let ids: Ids;
let otherIds: Ids;
let snapshot: () => Promise<Snapshot>;
let bad: Record<string, string>;
let expired: Record<string, string>;
let checks = 0;
const covered = new Set<string>();

beforeAll(async () => {
  world = await createWorld(api, doc);
  ids = await createFixtures(world);
  otherIds = await createFixtures(world, undefined, world.other);
  snapshot = await snapshotter(api.rt.db);
  bad = await badCredentials(api.config.IDENTITY_SECRET_KEY!, api.serviceToken, world.owner.token);
  expired = await expiredCredentials(api.config.IDENTITY_SECRET_KEY!, 'owner');
}, 120_000);
afterAll(async () => {
  console.info(`authorization matrix: ${covered.size} authenticated operations, ${checks} checks`);
  await api.close();
});

const key = (op: Operation) => `${op.method} ${op.path}`;
const containsAny = (value: unknown, needles: string[]) =>
  needles.some((n) => JSON.stringify(value ?? null).includes(n));

/** The generic rule of decisions.md section 2, per column. */
function expected(op: Operation, body: unknown): Record<Column, Expectation> {
  const userOnly = op.schemes.length === 1 && op.schemes[0] === 'bearer';
  const serviceOnly = op.schemes.length === 1 && op.schemes[0] === 'service';
  const ownedIds = Object.values(ids);
  let other: Expectation;
  if (serviceOnly)
    other = 403; // any user's token is the wrong scheme
  else if (op.params.some((p) => p.in === 'path'))
    other = 404; // another user's record = a missing one
  else if (containsAny(body, ownedIds))
    other = 422; // another user's id in the body = nonexistent
  else other = 'own';
  // The other user's own records in the path, the owner's ids in the body: they do not exist for them.
  const crossRef =
    op.schemes.includes('bearer') && op.params.some((p) => p.in === 'path') && containsAny(body, ownedIds)
      ? 422
      : 'n/a';
  const generic: Record<Column, Expectation> = {
    none: 401,
    bad: 401,
    expired: 401,
    other,
    crossRef,
    wrongScheme: userOnly || serviceOnly ? 403 : 'n/a',
    owner: 'own',
  };
  return { ...generic, ...EXCEPTIONS[op.operationId]?.expect };
}

function expectProblem(res: TestResponse, status: number, what: string) {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(status);
  expect(res.headers.get('content-type'), what).toContain('application/problem+json');
  expect(res.body, what).toMatchObject({
    type: expect.any(String),
    title: expect.any(String),
    status,
    detail: expect.any(String),
  });
}

function expectOwn(res: TestResponse, what: string, foreignIds: string[]) {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBeLessThan(300);
  for (const id of foreignIds) expect(res.text, `${what} leaks ${id}`).not.toContain(id);
}

describe('authorization matrix', () => {
  it('should list every operation without credentials among the known unauthenticated ones', () => {
    for (const op of world.ops.filter((o) => o.schemes.length === 0)) {
      expect(
        UNAUTHENTICATED[key(op)],
        `${key(op)} (${op.operationId}) takes no credentials: add it to UNAUTHENTICATED with its own test`,
      ).toBeDefined();
    }
  });

  it('should keep no exception row for an operation the document lacks', () => {
    const known = new Set(world.ops.map((o) => o.operationId));
    expect(Object.keys(EXCEPTIONS).filter((id) => !known.has(id))).toEqual([]);
    expect(Object.keys(ON_CALLER).filter((id) => !known.has(id))).toEqual([]);
    expect(Object.keys(DESTRUCTIVE_POSTS).filter((id) => !known.has(id))).toEqual([]);
  });

  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) {
      const operationId: string = item[method].operationId;
      it(`${method.toUpperCase()} ${path} (${operationId})`, async () => {
        const op = world.ops.find((o) => o.operationId === operationId)!;
        if (op.schemes.length === 0) return; // checked above and by its own scheme's tests
        const req = buildRequest(doc, op, ids);
        const want = expected(op, req.body);
        const ownerAuth = op.schemes.includes('bearer') ? `Bearer ${world.owner.token}` : `Bearer ${api.serviceToken}`;
        const check = async (column: Column, label: string, authorization: string | undefined) => {
          const expectation = want[column];
          if (expectation === 'n/a') return;
          checks++;
          // A fresh request each time: a new Idempotency-Key, so no answer is a replay.
          const fresh =
            column === 'crossRef' ? buildRequest(doc, op, otherIds, { bodyIds: ids }) : buildRequest(doc, op, ids);
          const res = await send(api, fresh, authorization);
          const what = `${op.operationId} × ${column} (${label})`;
          if (expectation === 'own') expectOwn(res, what, [...Object.values(ids)]);
          else expectProblem(res, expectation, what);
          return res;
        };

        // Every refused request must leave the stored data as it was.
        const before = await snapshot();
        await check('none', 'no Authorization header', undefined);
        for (const [label, value] of Object.entries(bad)) await check('bad', label, value);
        for (const [label, value] of Object.entries(expired)) await check('expired', label, value);
        if (want.wrongScheme !== 'n/a') {
          await check(
            'wrongScheme',
            op.schemes[0] === 'bearer' ? 'service token' : "owner's user token",
            op.schemes[0] === 'bearer' ? `Bearer ${api.serviceToken}` : `Bearer ${world.owner.token}`,
          );
        }
        if (want.other !== 'own')
          await check('other', "other user's token on the owner's records", `Bearer ${world.other.token}`);
        await check('crossRef', "other user's own records, the owner's ids in the body", `Bearer ${world.other.token}`);
        expect(
          changedTables(before, await snapshot()),
          `${op.operationId}: refused requests changed stored data`,
        ).toEqual([]);
        // An operation on the caller acts on a throwaway account, never on the world's users.
        const onCaller = ON_CALLER[op.operationId] !== undefined;
        const throwaway = async () => `Bearer ${await api.token(`throwaway-${randomUUID().slice(0, 8)}`)}`;
        if (want.other === 'own')
          await check('other', "other user's token", onCaller ? await throwaway() : `Bearer ${world.other.token}`);

        // The owner's identical request succeeds, so the refusals above were about credentials.
        // Destructive operations run on a fresh set of records, keeping the shared set whole.
        if (want.owner !== 'n/a') {
          checks++;
          const destructive =
            op.method === 'DELETE' || op.method === 'PUT' || DESTRUCTIVE_POSTS[op.operationId] !== undefined;
          const target = destructive ? await createFixtures(world, referencedResources(doc, op)) : ids;
          const res = await send(api, buildRequest(doc, op, target), onCaller ? await throwaway() : ownerAuth);
          const what = `${op.operationId} × owner`;
          if (want.owner === 'own') expectOwn(res, what, []);
          else expectProblem(res, want.owner, what);
        }
        if (onCaller) {
          const { rows } = await api.rt.db.query(
            'test.world_users',
            'SELECT id FROM app_user WHERE id = ANY($1::uuid[])',
            [[world.owner.userId, world.other.userId]],
          );
          expect(rows, `${op.operationId} touched the matrix's users`).toHaveLength(2);
        }
        covered.add(op.operationId);
      });
    }
  }
});

// Proxy audio links carry their own credential: uid, exp and sig = base64url HMAC-SHA256 with
// AUDIO_URL_SIGNING_KEY over "{meeting_id}:{user_id}:{exp}" (decisions.md section 4).
describe('proxy audio links', () => {
  const sign = (key: string, meetingId: string, uid: string, exp: number) =>
    createHmac('sha256', key).update(`${meetingId}:${uid}:${exp}`).digest('base64url');
  const link = (meetingId: string, q: Record<string, string | number>) =>
    `/meetings/${meetingId}/audio?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`;
  const proxyPath = async (token: string, meetingId: string) => {
    const res = await api.request('GET', `/meetings/${meetingId}/audio-url`, { token });
    expect(res.status, res.text).toBe(200);
    const u = new URL(res.body.proxy_url);
    return { path: u.pathname + u.search, params: Object.fromEntries(u.searchParams) };
  };

  it('should stream the audio through the owner link with no other credential', async () => {
    const { path } = await proxyPath(world.owner.token, ids.meetingWithAudio);
    const res = await fetch(api.url + path);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(RAW_SAMPLE))).toBe(true);
  });

  it("should refuse another user's, another meeting's, expired and tampered links with 403", async () => {
    const key = api.config.AUDIO_URL_SIGNING_KEY;
    const meeting = ids.meetingWithAudio;
    const { params } = await proxyPath(world.owner.token, meeting);
    const otherOwn = await proxyPath(world.other.token, otherIds.meetingWithAudio);
    const secondMeeting = (await createFixtures(world, ['meetingWithAudio'])).meetingWithAudio;
    const exp = Math.floor(Date.now() / 1000) + 600;
    const past = Math.floor(Date.now() / 1000) - 1;
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    const cases: Record<string, string> = {
      'other user: a genuine link of a user who does not own the meeting': link(meeting, {
        uid: world.other.userId,
        exp,
        sig: sign(key, meeting, world.other.userId, exp),
      }),
      "other user: the other user's link of their own meeting, pointed at this one": link(meeting, otherOwn.params),
      "other meeting: the owner's link of this meeting on their second meeting": link(secondMeeting, params),
      'expired: correctly signed, exp in the past': link(meeting, {
        uid: world.owner.userId,
        exp: past,
        sig: sign(key, meeting, world.owner.userId, past),
      }),
      'tampered: one character of sig changed': link(meeting, { ...params, sig: flip(params.sig) }),
      'tampered: exp extended without re-signing': link(meeting, { ...params, exp: Number(params.exp) + 3600 }),
      'tampered: uid swapped to the other user': link(meeting, { ...params, uid: world.other.userId }),
      'tampered: sig truncated': link(meeting, { ...params, sig: params.sig.slice(0, -2) }),
      'tampered: sig missing': link(meeting, { uid: params.uid, exp: params.exp }),
      'forged: signed with the service token as key': link(meeting, {
        uid: world.owner.userId,
        exp,
        sig: sign(api.serviceToken, meeting, world.owner.userId, exp),
      }),
      'no query at all': `/meetings/${meeting}/audio`,
    };
    for (const [label, path] of Object.entries(cases)) {
      checks++;
      // A bearer token of the owner does not stand in for the link's signature.
      expectProblem(await api.request('GET', path, { token: world.owner.token }), 403, `proxy link, ${label}`);
    }
  });
});
