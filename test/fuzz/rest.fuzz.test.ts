// Fuzzing every operation of GET /openapi.json with fast-check: a valid request on real records,
// then 1-3 hostile mutations (body values and texts, content types, path ids, queries, headers,
// credentials, methods). Property: never a 5xx; every 4xx is problem+json with type, title,
// status and detail; a refused request leaves every table as it was (checksums before/after).
// `npm test` runs a seeded quick run; `npm run test:fuzz` the long one (FUZZ_RUNS, FUZZ_SEED).
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi } from '../harness';
import { changedTables, snapshotter, type Snapshot } from '../support/db-snapshot';
import {
  buildRequest,
  createFixtures,
  createWorld,
  referencedResources,
  type Ids,
  type World,
} from '../support/fixtures';
import { rawRequest, type RawResponse } from '../support/http';
import { fetchDoc, type Operation } from '../support/openapi';
import {
  badContentType,
  badHeader,
  badId,
  badQueryValue,
  malformedBody,
  nastyValue,
  printable,
  serialize,
} from './arbitraries';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const JSON_LIMIT = 256 * 1024;

type Mutation =
  | { kind: 'value'; at: number; value: unknown }
  | { kind: 'extra'; key: string; value: unknown }
  | { kind: 'drop'; at: number }
  | { kind: 'whole'; value: unknown }
  | { kind: 'text'; pick: number; junk: string }
  | { kind: 'contentType'; value: string | undefined }
  | { kind: 'pathParam'; at: number; value: string }
  | { kind: 'query'; at: number; name: string; value: string; repeat: boolean }
  | { kind: 'header'; name: string; value: string | undefined }
  | { kind: 'credentials'; who: 'other' | 'none' | 'wrongScheme' }
  | { kind: 'method'; value: string };

interface Case {
  op: number;
  mutations: Mutation[];
}

const api = await startApi({ API_MAX_JSON_BYTES: String(JSON_LIMIT) });
const doc = await fetchDoc(api);
let world: World;
let ids: Ids;
let snapshot: () => Promise<Snapshot>;
const statuses: Record<number, number> = {};
const failures: string[] = [];
let cases = 0;
/** DELETE /me cases sent as a throwaway account (see runCase). */
let throwawayErasures = 0;

beforeAll(async () => {
  world = await createWorld(api, doc);
  ids = await createFixtures(world);
  snapshot = await snapshotter(api.rt.db);
}, 120_000);
afterAll(() => api.close());

const mutation = (fixtureIds: string[]): fc.Arbitrary<Mutation> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('value' as const), at: fc.nat(), value: nastyValue }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('extra' as const),
        key: fc.oneof(printable(20), fc.constantFrom('__proto__', 'constructor', 'id', 'user_id', 'deleted_at')),
        value: nastyValue,
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('whole' as const), value: nastyValue }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('text' as const), pick: fc.nat(), junk: printable(80) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('contentType' as const),
        value: fc.option(badContentType, { nil: undefined }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('pathParam' as const), at: fc.nat(), value: badId(fixtureIds) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('query' as const),
        at: fc.nat(),
        name: printable(12),
        value: badQueryValue,
        repeat: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: badHeader.map((h) => ({ kind: 'header' as const, ...h })) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('credentials' as const),
        who: fc.constantFrom('other' as const, 'none' as const, 'wrongScheme' as const),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('method' as const),
        value: fc.constantFrom('GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'),
      }),
    },
  );

/** Every member position of a JSON value, as key paths. */
/** A generated value may be one shared instance (a constant): each use gets its own copy, or a
 * later mutation at a position inside it would make the body circular. */
const fresh = <T>(value: T): T => structuredClone(value);

function positions(
  value: unknown,
  path: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    for (const [k, v] of Object.entries(value)) {
      const p = [...path, Array.isArray(value) ? Number(k) : k];
      out.push(p);
      if (out.length < 2_000) positions(v, p, out);
    }
  }
  return out;
}

function parentOf(root: any, path: (string | number)[]) {
  let node = root;
  for (const k of path.slice(0, -1)) node = node[k];
  return node;
}

interface Prepared {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

/** Applies the mutations to a valid request of the operation. */
function prepare(op: Operation, muts: Mutation[]): Prepared {
  const base = buildRequest(doc, op, ids, { full: true });
  let body: unknown = base.body === undefined ? undefined : structuredClone(base.body);
  let text: string | Uint8Array | undefined;
  const headers: Record<string, string | undefined> = { ...base.headers };
  if (base.contentType) headers['content-type'] = base.contentType;
  headers.authorization = `Bearer ${op.schemes.includes('bearer') ? world.owner.token : api.serviceToken}`;
  let method = base.method;
  const pathParams = op.params.filter((p) => p.in === 'path').map((p) => p.name);
  const pathValues: Record<string, string> = {};
  const segments = base.path.split('/');
  op.path.split('/').forEach((seg, i) => {
    const m = /^\{(.+)\}$/.exec(seg);
    if (m) pathValues[m[1]] = decodeURIComponent(segments[i]);
  });
  const query = new URLSearchParams(base.query);
  const queryNames = op.params.filter((p) => p.in === 'query').map((p) => p.name);

  for (const m of muts) {
    switch (m.kind) {
      case 'value': {
        const all = positions(body);
        if (!all.length) body = fresh(m.value);
        else {
          const p = all[m.at % all.length];
          parentOf(body, p)[p[p.length - 1]] = fresh(m.value);
        }
        break;
      }
      case 'extra':
        if (body && typeof body === 'object' && !Array.isArray(body))
          Object.defineProperty(body, m.key, {
            value: fresh(m.value),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        else body = { [m.key]: fresh(m.value) };
        break;
      case 'drop': {
        const all = positions(body);
        if (all.length) {
          const p = all[m.at % all.length];
          const parent = parentOf(body, p);
          if (Array.isArray(parent)) parent.splice(Number(p[p.length - 1]), 1);
          else delete parent[p[p.length - 1]];
        }
        break;
      }
      case 'whole':
        body = fresh(m.value);
        break;
      case 'text': {
        const valid = body === undefined ? '{}' : serialize(body);
        text = malformedPick(valid, m.pick, m.junk);
        break;
      }
      case 'contentType':
        headers['content-type'] = m.value;
        if (body === undefined && text === undefined) text = '{}';
        break;
      case 'pathParam':
        if (pathParams.length) pathValues[pathParams[m.at % pathParams.length]] = m.value;
        break;
      case 'query': {
        const name = queryNames.length && m.at % 3 ? queryNames[m.at % queryNames.length] : m.name;
        if (m.repeat) query.append(name, m.value);
        else query.set(name, m.value);
        break;
      }
      case 'header':
        headers[m.name] = m.value;
        break;
      case 'credentials':
        headers.authorization =
          m.who === 'none'
            ? undefined
            : m.who === 'other'
              ? `Bearer ${world.other.token}`
              : `Bearer ${op.schemes.includes('bearer') ? api.serviceToken : world.owner.token}`;
        break;
      case 'method':
        method = m.value;
        break;
    }
  }
  if (text === undefined && body !== undefined) text = body instanceof Uint8Array ? body : serialize(body);
  const path = op.path.replace(/\{([^}]+)\}/g, (_, n: string) => pathValues[n]);
  const qs = query.toString();
  const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
  return { method, url: qs ? `${path}?${qs}` : path, headers: clean, body: text };
}

function malformedPick(valid: string, pick: number, junk: string): string | Uint8Array {
  // Deterministic choice from the malformed-text generator (seeded by the case's own numbers).
  const [value] = fc.sample(malformedBody(valid), { seed: pick, numRuns: 1 });
  return pick % 7 === 0 ? junk : value;
}

function describeCase(op: Operation, req: Prepared): string {
  const body =
    req.body === undefined
      ? ''
      : typeof req.body === 'string'
        ? req.body.slice(0, 300)
        : `<${req.body.byteLength} bytes>`;
  const headers = Object.fromEntries(
    Object.entries(req.headers).map(([k, v]) => [k, k === 'authorization' ? `${v.slice(0, 12)}…` : v.slice(0, 80)]),
  );
  return `${op.operationId}: ${req.method} ${req.url.slice(0, 200)} ${JSON.stringify(headers)} ${body}`;
}

async function runCase(c: Case): Promise<void> {
  const op = world.ops[c.op % world.ops.length];
  const req = prepare(op, c.mutations);
  // DELETE /me (generated, or another operation's method mutated into it) erases the caller: with
  // the world's owner or other user it would erase them, so it erases a throwaway account of its own.
  const worldTokens = [world.owner.token, world.other.token].map((t) => `Bearer ${t}`);
  if (
    req.method === 'DELETE' &&
    req.url.split('?')[0] === '/me' &&
    worldTokens.includes(req.headers.authorization ?? '')
  ) {
    const token = await api.token(`fuzz-throwaway-${randomUUID().slice(0, 8)}`);
    await api.userId(token); // created before the snapshot: a refusal must leave the tables as they were
    req.headers.authorization = `Bearer ${token}`;
    throwawayErasures++;
  }
  const before = await snapshot();
  let res: RawResponse;
  try {
    res = await rawRequest(api.url, req.url, { method: req.method, headers: req.headers, body: req.body });
  } catch (err) {
    // No answer at all (connection reset, crash) is a failure too; the message names the case.
    failures.push(`no response (${(err as Error).message}) — ${describeCase(op, req)}`);
    return;
  }
  const text = res.text;
  cases++;
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  const fail = (why: string) =>
    void failures.push(`${why} — ${describeCase(op, req)} → ${res.status} ${text.slice(0, 300)}`);
  if (res.status >= 500) return fail(`${res.status}`);
  if (res.status >= 400) {
    let problem: any;
    try {
      problem = JSON.parse(text);
    } catch {
      problem = undefined;
    }
    const shaped =
      (res.headers['content-type'] ?? '').includes('application/problem+json') &&
      typeof problem?.type === 'string' &&
      typeof problem?.title === 'string' &&
      typeof problem?.detail === 'string' &&
      problem?.status === res.status;
    if (!shaped) fail('not problem+json');
    const changed = changedTables(before, await snapshot());
    if (changed.length) fail(`refused but changed ${changed.join(', ')}`);
  } else if (res.status < 300 && (req.method === 'DELETE' || req.method === 'PUT')) {
    // A destructive success consumed records later cases expect: make them anew.
    Object.assign(ids, await createFixtures(world, referencedResources(doc, op)));
  }
}

it(
  `should answer ${RUNS} generated hostile requests without a 5xx, with problem+json, leaving data unchanged when refused`,
  async () => {
    const fixtureIds = Object.values(ids);
    const caseArb = fc.record({
      op: fc.nat(),
      mutations: fc.array(mutation(fixtureIds), { minLength: 1, maxLength: 3 }),
    });
    await fc.assert(fc.asyncProperty(caseArb, runCase), { numRuns: RUNS, seed: SEED, endOnFailure: true });
    // The service is still up and well after all of it.
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
    console.info(
      `REST fuzz: ${cases} cases over ${world.ops.length} operations (seed ${SEED}); statuses ${JSON.stringify(statuses)}; 5xx ${Object.entries(
        statuses,
      )
        .filter(([s]) => Number(s) >= 500)
        .reduce(
          (n, [, v]) => n + v,
          0,
        )}; DELETE /me as a throwaway account ${throwawayErasures}; failures ${failures.length}`,
    );
    expect(failures.slice(0, 15)).toEqual([]);
  },
  Math.max(120_000, RUNS * 1_000),
);
