// Fuzzing /ws with fast-check: generated text frames (random JSON, wrong types, huge strings,
// deep nesting, unknown types, bad uuids, commands before hello) and binary frames (short,
// huge sequence numbers, oversize, frames without a recording). Properties: before `hello`
// every such first message closes the socket with 4400/4401 and never gets `ready`; after it
// every bad message gets an `error` (code, message, ref naming the command) and the connection
// stays open; the server never fails (no `unavailable` error, /healthz and a fresh hello
// answer); the database is unchanged. `npm test` runs a seeded quick run; FUZZ_RUNS and
// FUZZ_SEED make the long one.
import fc from 'fast-check';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedDatabase } from '@mi/lib/db/open';
import {
  TestClient,
  createMeeting,
  fileEnv,
  openTestDatabase,
  startInstance,
  token,
  type Instance,
  type Match,
  type Message,
} from '../live/helpers';
import { sleep } from '../support/poll';
import { changedTables, snapshotter, type Snapshot } from '../support/db-snapshot';
import { nastyValue, printable } from './arbitraries';

const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const MAX_FRAME_BYTES = 4096;
/** Binary frame errors are reported at most once a second per code (docs/websocket.md). */
const FRAME_ERROR_INTERVAL_MS = 1_000;
const REPLY_MS = 5_000;
const ERROR_CODES = new Set([
  'bad_message',
  'bad_frame',
  'frame_too_large',
  'sequence_out_of_range',
  'buffer_full',
  'meeting_not_found',
  'not_a_recording_meeting',
  'recording_in_progress',
  'recording_open',
  'recording_not_found',
  'recording_not_open',
  'recording_stopping',
  'no_recording',
]);

let database: OpenedDatabase;
let core: Instance;
let alice: string;
let world: { ownRecording: string; ownUpload: string; othersMeeting: string };
let snapshot: () => Promise<Snapshot>;
let before: Snapshot;
/** Authenticated connections of alice; binary cases rotate over them to stay clear of the error throttle. */
const pool: { client: TestClient; lastError: Map<string, number> }[] = [];
const seen = { text: 0, binary: 0, preHello: 0 };
/** Error codes and close codes the cases got: the generators must reach past the schema checks. */
const outcomes = new Map<string, number>();
const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);

beforeAll(async () => {
  database = await openTestDatabase();
  core = await startInstance(database, {
    ...fileEnv(),
    LIVE_MAX_FRAME_BYTES: String(MAX_FRAME_BYTES),
    ML_SERVICE_URL: 'http://127.0.0.1:9',
  });
  alice = await token(core.config, 'ws-fuzz-alice');
  const bob = await token(core.config, 'ws-fuzz-bob');
  world = {
    ownRecording: await createMeeting(core, alice),
    ownUpload: await createMeeting(core, alice, 'upload'),
    othersMeeting: await createMeeting(core, bob),
  };
  for (let i = 0; i < 4; i++) pool.push({ client: await TestClient.connect(core.wsUrl, alice), lastError: new Map() });
  snapshot = await snapshotter(core.rt.db);
  before = await snapshot();
}, 60_000);

afterAll(async () => {
  for (const p of pool) p.client.close();
  await core?.close();
  await database?.close();
});

// --- generators ----------------------------------------------------------------------------

const COMMANDS = ['StartRecordingCommand', 'ResumeRecordingCommand', 'StopRecordingCommand'] as const;

/** Meeting ids a command may name without it ever being valid for a start. */
const meetingRef = () =>
  fc.oneof(
    fc.uuid(),
    fc.constantFrom(
      'own-upload',
      'others',
      'not-a-uuid',
      '',
      'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ',
      '00000000-0000-0000-0000-000000000000',
    ),
    nastyValue,
  );

/** A command-shaped object with one or more things wrong (or a harmless valid one that cannot succeed). */
const commandLike = fc
  .record({
    type: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom<unknown>(...COMMANDS, 'hello') },
      { weight: 1, arbitrary: nastyValue },
      { weight: 1, arbitrary: printable(30) },
    ),
    meeting_id: meetingRef(),
    encoding: fc.oneof(fc.constantFrom<unknown>('pcm_s16le', 'webm_opus', 'PCM_S16LE', 'mp3', ''), nastyValue),
    sample_rate: fc.oneof(fc.constantFrom<unknown>(16000, 7999, 192001, 16000.5, '16000', -1), nastyValue),
    audio_version: fc.oneof(fc.constantFrom<unknown>(1, 0, -1, 1.5, '1', 2 ** 53), nastyValue),
    max_duration_seconds: fc.oneof(fc.constantFrom<unknown>(0, 1, -5, 1e12, '60'), nastyValue),
    token: fc.oneof(printable(40), nastyValue),
    client_id: fc.oneof(fc.uuid(), nastyValue),
    extra: fc.option(fc.tuple(printable(12), nastyValue)),
  })
  .chain((c) =>
    fc
      .subarray([
        'meeting_id',
        'encoding',
        'sample_rate',
        'audio_version',
        'max_duration_seconds',
        'token',
        'client_id',
      ] as const)
      .map((keep) => {
        const msg: Record<string, unknown> = { type: c.type };
        for (const k of keep) msg[k] = c[k];
        if (c.extra) msg[c.extra[0] || 'x'] = c.extra[1];
        return msg;
      }),
  );

/** Well-formed commands that still cannot succeed: unknown, foreign or unsuitable meetings, no take. */
const wellFormedButWrong = fc.oneof(
  fc.record({
    type: fc.constant('StartRecordingCommand'),
    meeting_id: fc.oneof(fc.uuid(), fc.constantFrom('own-upload', 'others')),
    encoding: fc.constantFrom('pcm_s16le', 'webm_opus'),
    sample_rate: fc.integer({ min: 8_000, max: 192_000 }),
  }),
  fc.record({
    type: fc.constant('ResumeRecordingCommand'),
    meeting_id: fc.oneof(fc.uuid(), fc.constantFrom('own-recording', 'own-upload', 'others')),
    audio_version: fc.integer({ min: 1, max: 2 ** 31 }),
  }),
  fc.record({
    type: fc.constant('StopRecordingCommand'),
    meeting_id: fc.oneof(fc.uuid(), fc.constantFrom('own-recording', 'own-upload', 'others')),
  }),
);

/** A command nested `depth` times in its own meeting_id (as text: too deep for JSON.stringify). */
const deep = (depth: number) =>
  `${'{"type":"StartRecordingCommand","meeting_id":['.repeat(depth)}1${']}'.repeat(depth)}`;

type TextCase = { kind: 'text'; text: string };
type BinaryCase = { kind: 'binary'; bytes: Uint8Array };

const textCase: fc.Arbitrary<TextCase> = fc
  .oneof(
    { weight: 6, arbitrary: commandLike.map((m) => JSON.stringify(m)) },
    { weight: 3, arbitrary: wellFormedButWrong.map((m) => JSON.stringify(m)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 80 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'null',
        '[]',
        '1',
        '"hello"',
        '{',
        '{"type":',
        '{"type":"StopRecordingCommand"',
        '\u0000',
        '{"type":"StopRecordingCommand","meeting_id":"x"}}',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(200, 2_000, 20_000).map((n) => deep(n)) },
    { weight: 1, arbitrary: fc.constantFrom(2_000, 20_000).map((n) => deep(n).slice(0, -7)) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(10_000, 300_000, 900_000)
        .map((n) =>
          JSON.stringify({ type: 'StartRecordingCommand', meeting_id: 'x'.repeat(n), encoding: 'pcm_s16le' }),
        ),
    },
  )
  .map((text) => ({ kind: 'text' as const, text }));

const header = (seq: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(seq);
  return b;
};
const binaryCase: fc.Arbitrary<BinaryCase> = fc
  .oneof(
    fc.uint8Array({ maxLength: 8 }),
    fc
      .tuple(fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n }), fc.uint8Array({ minLength: 1, maxLength: 64 }))
      .map(([s, b]) => Buffer.concat([header(s), b])),
    fc
      .tuple(fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }), fc.integer({ min: 1, max: MAX_FRAME_BYTES }))
      .map(([s, n]) => Buffer.concat([header(s), Buffer.alloc(n, 7)])),
    fc
      .tuple(fc.bigInt({ min: 0n, max: 1000n }), fc.integer({ min: MAX_FRAME_BYTES + 1, max: 4 * MAX_FRAME_BYTES }))
      .map(([s, n]) => Buffer.concat([header(s), Buffer.alloc(n, 1)])),
    fc.uint8Array({ maxLength: 2 * MAX_FRAME_BYTES }),
  )
  .map((bytes) => ({ kind: 'binary' as const, bytes }));

/** What the server answers a binary frame with when nothing is recording on the connection. */
function frameErrorOf(bytes: Uint8Array): string {
  const b = Buffer.from(bytes);
  if (b.length <= 8 || b.readBigUInt64BE(0) > BigInt(Number.MAX_SAFE_INTEGER)) return 'bad_frame';
  return b.length - 8 > MAX_FRAME_BYTES ? 'frame_too_large' : 'no_recording';
}

/** Puts the world's ids where the generator left placeholders. */
function resolveIds(text: string): string {
  return text
    .replaceAll('"own-recording"', JSON.stringify(world.ownRecording))
    .replaceAll('"own-upload"', JSON.stringify(world.ownUpload))
    .replaceAll('"others"', JSON.stringify(world.othersMeeting));
}

/** The `type` a reply's `ref` must name: the message's type when it is a JSON object with a string one. */
function refOf(text: string): string | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) && typeof v.type === 'string' ? v.type : null;
  } catch {
    return null;
  }
}

// --- helpers -------------------------------------------------------------------------------

function nextMessage(client: TestClient, from: number, match: Match, ms = REPLY_MS): Promise<Message | null> {
  return client.waitFor(match, { timeoutMs: ms, from }).catch(() => null);
}

async function closeOf(client: TestClient, ms = REPLY_MS): Promise<number | null> {
  return Promise.race([client.closed.then((c) => c.code), sleep(ms).then(() => null)]);
}

async function serverStillWell(): Promise<void> {
  expect((await fetch(`${core.url}/healthz`)).status).toBe(200);
  const fresh = await TestClient.connect(core.wsUrl, alice);
  fresh.close();
}

// --- properties ----------------------------------------------------------------------------

describe('WebSocket fuzzing', () => {
  it('should close a socket whose first message is not a valid hello with 4400 or 4401, never ready', async () => {
    const firstMessage = fc.oneof(
      textCase,
      binaryCase,
      commandLike.map((m) => ({ kind: 'text' as const, text: JSON.stringify({ ...m, type: 'hello' }) })),
    );
    await fc.assert(
      fc.asyncProperty(firstMessage, async (c) => {
        seen.preHello++;
        const client = await TestClient.open(core.wsUrl);
        try {
          client.ws.send(c.kind === 'text' ? resolveIds(c.text) : c.bytes, { binary: c.kind === 'binary' });
          const code = await closeOf(client);
          count(`close ${code}`);
          expect(client.ofType('ready')).toEqual([]);
          expect([4400, 4401]).toContain(code);
        } finally {
          client.ws.terminate();
        }
      }),
      { numRuns: Math.ceil(RUNS / 3), seed: SEED, endOnFailure: true },
    );
    expect(changedTables(before, await snapshot())).toEqual([]);
    await serverStillWell();
    before = await snapshot(); // a fresh hello may refresh the user row: the baseline moves with it
  }, 120_000);

  it('should answer every bad text or binary message after hello with an error, keep the connection and leave the database unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 3, arbitrary: textCase }, { weight: 2, arbitrary: binaryCase }),
        async (c) => {
          if (c.kind === 'text') {
            seen.text++;
            const text = resolveIds(c.text);
            const { client } = pool[0];
            const from = client.mark();
            client.ws.send(text);
            const reply = await nextMessage(client, from, { type: (t) => t === 'error' || t.startsWith('Recording') });
            expect(reply, `no answer to ${text.slice(0, 200)}`).toMatchObject({
              type: 'error',
              code: expect.any(String),
              message: expect.any(String),
            });
            count(reply!.code);
            expect(ERROR_CODES.has(reply!.code), `code ${reply!.code}`).toBe(true);
            expect(reply!.ref).toBe(refOf(text));
          } else {
            seen.binary++;
            const code = frameErrorOf(c.bytes);
            // The connection whose last error of this code is oldest; wait out the throttle if needed.
            const slot = pool
              .slice(1)
              .reduce((a, b) => ((a.lastError.get(code) ?? 0) <= (b.lastError.get(code) ?? 0) ? a : b));
            const wait = (slot.lastError.get(code) ?? 0) + FRAME_ERROR_INTERVAL_MS + 50 - Date.now();
            if (wait > 0) await sleep(wait);
            const from = slot.client.mark();
            slot.client.ws.send(c.bytes, { binary: true });
            const reply = await nextMessage(slot.client, from, { type: 'error' });
            count(reply?.code ?? 'none');
            expect(reply).toMatchObject({ type: 'error', code, ref: 'audio', message: expect.any(String) });
            slot.lastError.set(code, Date.now());
          }
          for (const p of pool) expect(p.client.ws.readyState).toBe(WebSocket.OPEN);
          expect(changedTables(before, await snapshot())).toEqual([]);
        },
      ),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    console.log(`ws fuzz: ${JSON.stringify(seen)} ${JSON.stringify(Object.fromEntries(outcomes))}`);
    expect(seen.text + seen.binary).toBeGreaterThanOrEqual(RUNS);
    for (const code of [
      'close 4400',
      'close 4401',
      'bad_message',
      'meeting_not_found',
      'not_a_recording_meeting',
      'recording_not_found',
      'no_recording',
      'bad_frame',
      'frame_too_large',
    ]) {
      expect(outcomes.get(code), code).toBeGreaterThan(0);
    }
    await serverStillWell();
    before = await snapshot(); // a fresh hello may refresh the user row: the baseline moves with it
  }, 300_000);

  it('should still record on a connection that was fed garbage', async () => {
    const { client } = pool[0];
    const started = await client.start(world.ownRecording);
    expect(started).toMatchObject({ type: 'RecordingStarted', audio_version: 1 });
    for (let seq = 0; seq < 10; seq++) client.frame(seq);
    expect(await client.stop(world.ownRecording)).toMatchObject({
      type: 'RecordingStopped',
      highest_contiguous_sequence: 9,
      missing_ranges: [],
    });
  }, 60_000);
});
