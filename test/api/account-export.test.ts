// Account export (decisions.md section 8, docs/exports.md), as a user takes it: request it, poll
// until ready, download the signed link over HTTP from the GCS emulator, unpack it with the
// system's unzip, and check every file: sha256 against the manifest, the JSON against the
// published JSON Schema (docs/account-export.schema.json), the VTT with the W3C parser the
// transcript export tests use, the WAV's header and samples against the take. Then the errors,
// a builder killed mid-archive, a builder that lost its lease, retention and DELETE /me.
import { spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// @ts-expect-error the W3C parser ships no types
import { WebVTTParser } from 'webvtt-parser';
import { SERVICE } from '@mi/lib/domain/actor';
import { getExport, markExportReady } from '@mi/lib/repositories/account-exports';
import { buildExport, claimNextExport, runAccountExports } from '@mi/lib/use-cases/account-exports';
import { runUseCase } from '@mi/lib/use-cases/use-case';
import { runWorkflow } from '@mi/lib/use-cases/workflow';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { createTake, framesBytes, stopTake, storeLiveSegment } from '../recording-fixtures';

const entities = createRequire(import.meta.url)('webvtt-parser/html-entities.json');
const parseVtt = (text: string) => new WebVTTParser(entities).parse(text, 'subtitles');
const schemaDoc = JSON.parse(readFileSync(new URL('../../docs/account-export.schema.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(schemaDoc);
const validatorOf = (def: string) => ajv.getSchema(`${schemaDoc.$id}#/$defs/${def}`)!;

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let api: ApiHarness;
let alice: string;
let aliceId: string;
let bob: string;
let recorded: string;
let uploadMeeting: string;
let uploaded: Buffer;
let takeAudio: Buffer;
const workDirs: string[] = [];

// A short lease, so that a builder that died is taken over within the test.
const LEASE_SECONDS = 2;

beforeAll(async () => {
  api = await startApi({ ACCOUNT_EXPORT_LEASE_SECONDS: String(LEASE_SECONDS) });
  alice = await api.token('alice');
  bob = await api.token('bob');
  aliceId = await api.userId(alice);
  await api.userId(bob);

  // Everything a user has: people, tags, tasks with a sub-task, a note, a thread with messages,
  const dana = (await api.post(alice, '/people', { display_name: 'Dana' })).body.id;
  expect((await api.post(alice, '/tags', { name: 'q4' })).status).toBe(201);
  const task = (await api.post(alice, '/tasks', { content: 'Send the deck' })).body.id;
  expect((await api.post(alice, `/tasks/${task}/sub-tasks`, { content: 'Draft' })).status).toBe(201);
  expect((await api.post(alice, '/notes', { content: 'Remember the budget' })).status).toBe(201);
  const thread = (await api.post(alice, '/threads', {})).body.id;
  expect((await api.post(alice, `/threads/${thread}/messages`, { role: 'user', content: 'Summarise' })).status).toBe(
    201,
  );

  // a live take of PCM (two segments: the WAV is their frames behind a header), with a transcript,
  const take = await createTake(api, alice);
  recorded = take.meetingId;
  await storeLiveSegment(api, take, 0, 9);
  await storeLiveSegment(api, take, 10, 24);
  await stopTake(api, take);
  takeAudio = framesBytes(0, 24);
  const segments = [
    { speaker_label: 'S0', text: 'Hello <all>', start_ms: 0, end_ms: 1500 },
    { speaker_label: 'S1', text: 'Thanks', start_ms: 1500, end_ms: 2500 },
  ];
  const appended = await api.request('POST', `/transcriptions/${take.transcriptionId}/segments`, {
    token: api.serviceToken,
    body: { segments },
  });
  expect(appended.status).toBe(204);
  const assigned = await api.request('POST', `/meetings/${recorded}/speaker-labels`, {
    token: alice,
    body: { speaker_label: 'S0', person_id: dana },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(assigned.status).toBe(200);

  // and an upload meeting with its audio file.
  uploadMeeting = await api.meeting(alice, 'upload');
  uploaded = Buffer.from(Array.from({ length: 30_000 }, (_, i) => i % 251));
  const put = await api.request('PUT', `/meetings/${uploadMeeting}/audio`, {
    token: alice,
    raw: new Uint8Array(uploaded),
    headers: { 'content-type': 'audio/mpeg' },
  });
  expect(put.status).toBe(201);
});
afterAll(async () => {
  for (const d of workDirs) rmSync(d, { recursive: true, force: true });
  await api?.close();
});

const requestExport = (token = alice, key = randomUUID()) =>
  api.request('POST', '/me/exports', { token, headers: { 'idempotency-key': key } });
const getExportOf = (id: string, token = alice) => api.request('GET', `/me/exports/${id}`, { token });
const build = () => runWorkflow(api.rt, SERVICE, runAccountExports, {});

/** Polls GET /me/exports/{id}, running the sweep, until the export is ready. */
async function untilReady(id: string) {
  return vi.waitFor(
    async () => {
      await runSweep(api.sweeper);
      const res = await getExportOf(id);
      expect(res.body.status).toBe('ready');
      return res.body;
    },
    { timeout: 60_000, interval: 500 },
  );
}

/** Downloads the archive over HTTP and unpacks it with the system's unzip; the directory. */
async function downloadAndUnzip(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const dir = mkdtempSync(path.join(tmpdir(), 'account-export-'));
  workDirs.push(dir);
  const zip = path.join(dir, 'export.zip');
  writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
  const out = path.join(dir, 'files');
  const unzip = spawnSync('unzip', ['-q', zip, '-d', out], { encoding: 'utf8' });
  expect(unzip.status, unzip.stderr).toBe(0);
  return out;
}

describe('POST /me/exports then GET /me/exports/{id}', () => {
  let exportId: string;
  let files: string;
  const key = randomUUID();
  let firstAnswer: string;

  it('should answer 202 pending with Location, replay the same answer, and emit account_export created', async () => {
    const res = await requestExport(alice, key);
    firstAnswer = res.text;
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ id: expect.any(String), status: 'pending', created_at: expect.any(String) });
    exportId = res.body.id;
    expect(res.headers.get('location')).toBe(`/me/exports/${exportId}`);
    const again = await requestExport(alice, key);
    expect(again.status).toBe(202);
    expect(again.text).toBe(res.text);
    expect(again.headers.get('location')).toBe(`/me/exports/${exportId}`);
    expect(await api.lastEvent(aliceId)).toMatchObject({
      type: 'EntityChanged',
      entity: 'account_export',
      action: 'created',
      id: exportId,
    });
    const got = await getExportOf(exportId);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: exportId, status: 'pending', url: null, byte_count: null, error: null });
  });

  it('should refuse a second unfinished export with 409 invalid_state, storing nothing (one unfinished export)', async () => {
    // A user of its own: the test stands alone (test:guards runs it without the others).
    const gina = await api.token('gina');
    const first = await requestExport(gina);
    expect(first.status).toBe(202);
    try {
      const res = await requestExport(gina);
      expect(res.status).toBe(409);
      // invalid_state answers the domain's one conflict type.
      expect(res.body).toMatchObject({
        type: expect.stringMatching(/\/conflict$/),
        detail: expect.stringMatching(/already pending or running/),
      });
      const list = await api.request('GET', '/me/exports', { token: gina });
      expect(list.body.items.map((e: { id: string }) => e.id)).toEqual([first.body.id]);
    } finally {
      // Not left pending for the builder tests below.
      await api.rt.db.query('test.drop_export', 'DELETE FROM account_export WHERE id = $1', [first.body.id]);
    }
  });

  it('should build it off the request: ready with a signed link, account_export updated', async () => {
    const ready = await untilReady(exportId);
    expect(ready.byte_count).toBeGreaterThan(0);
    const ttl = Date.parse(ready.url_expires_at!) - Date.now();
    expect(ttl).toBeGreaterThan(800_000);
    expect(ttl).toBeLessThanOrEqual(900_000);
    // (The sweep also finalized the take meanwhile: its events go between.)
    const events = (await api.lastEvents(aliceId, 10)).filter((e) => e.entity === 'account_export');
    expect(events.map((e) => [e.entity, e.action, e.id])).toEqual([
      ['account_export', 'created', exportId],
      ['account_export', 'updated', exportId], // running
      ['account_export', 'updated', exportId], // ready
    ]);
    files = await downloadAndUnzip(ready.url!);
    // The request retried (its answer lost) after the export moved on: the first answer, no second export.
    const replay = await requestExport(alice, key);
    expect(replay.status).toBe(202);
    expect(replay.text).toBe(firstAnswer);
    expect((await api.request('GET', '/me/exports', { token: alice })).body.items).toHaveLength(1);
  });

  it('should hold every file the manifest lists, each with its sha256 and size', () => {
    const manifest = JSON.parse(readFileSync(path.join(files, 'manifest.json'), 'utf8'));
    expect(validatorOf('manifest')(manifest), JSON.stringify(validatorOf('manifest').errors)).toBe(true);
    expect(manifest).toMatchObject({ format: 1, user_id: aliceId });
    const listed = spawnSync('unzip', ['-Z1', path.join(files, '..', 'export.zip')], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      .sort();
    expect(listed).toEqual(['manifest.json', ...manifest.files.map((f: { path: string }) => f.path)].sort());
    for (const f of manifest.files) {
      const bytes = readFileSync(path.join(files, f.path));
      expect({ path: f.path, bytes: bytes.length, sha256: sha256(bytes) }).toEqual(f);
    }
    expect(manifest.files.map((f: { path: string }) => f.path)).toEqual(
      expect.arrayContaining([
        'account.json',
        'people.json',
        'tags.json',
        'tasks.json',
        'notes.json',
        'threads.json',
        `meetings/${recorded}/meeting.json`,
        `meetings/${recorded}/transcript.json`,
        `meetings/${recorded}/transcript.vtt`,
        `meetings/${recorded}/audio/v1.wav`,
        `meetings/${uploadMeeting}/meeting.json`,
        `meetings/${uploadMeeting}/audio/v1.mp3`,
      ]),
    );
  });

  it('should hold JSON valid against the published schema of the archive, with the user records', () => {
    const read = (p: string) => JSON.parse(readFileSync(path.join(files, p), 'utf8'));
    const checks: [string, string][] = [
      ['account.json', 'account'],
      ['people.json', 'people'],
      ['tags.json', 'tags'],
      ['tasks.json', 'tasks'],
      ['notes.json', 'notes'],
      ['threads.json', 'threads'],
      [`meetings/${recorded}/meeting.json`, 'meeting'],
      [`meetings/${uploadMeeting}/meeting.json`, 'meeting'],
      [`meetings/${recorded}/transcript.json`, 'transcript'],
    ];
    for (const [file, def] of checks) {
      const validate = validatorOf(def);
      expect(validate(read(file)), `${file}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(read('account.json').user.id).toBe(aliceId);
    expect(read('people.json').map((p: { display_name: string }) => p.display_name)).toEqual(['Dana']);
    expect(read('tags.json').map((t: { name: string }) => t.name)).toEqual(['q4']);
    expect(read('tasks.json')).toMatchObject([{ content: 'Send the deck', sub_tasks: [{ content: 'Draft' }] }]);
    expect(read('notes.json')).toMatchObject([{ content: 'Remember the budget' }]);
    expect(read('threads.json')).toMatchObject([{ messages: [{ role: 'user', content: 'Summarise' }] }]);
    const meeting = read(`meetings/${recorded}/meeting.json`);
    expect(meeting).toMatchObject({
      id: recorded,
      speaker_labels: [{ speaker_label: 'S0' }],
      takes: [{ audio_version: 1, encoding: 'pcm_s16le', sample_rate: 500 }],
    });
    expect(read(`meetings/${recorded}/transcript.json`).segments.map((s: { speaker: string }) => s.speaker)).toEqual([
      'Dana',
      'S1',
    ]);
  });

  it('should hold a valid WebVTT transcript', () => {
    const tree = parseVtt(readFileSync(path.join(files, `meetings/${recorded}/transcript.vtt`), 'utf8'));
    expect(tree.errors).toEqual([]);
    expect(tree.cues.map((c: any) => [c.startTime, c.endTime, c.tree.children[0].value])).toEqual([
      [0, 1.5, 'Dana'],
      [1.5, 2.5, 'S1'],
    ]);
  });

  it("should hold the take as a WAV whose header and samples are the take's, and the upload as it was", () => {
    const wav = readFileSync(path.join(files, `meetings/${recorded}/audio/v1.wav`));
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(36 + takeAudio.length);
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt16LE(20)).toBe(1); // PCM
    expect(wav.readUInt16LE(22)).toBe(1); // mono
    expect(wav.readUInt32LE(24)).toBe(500); // the take's sample rate
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.toString('ascii', 36, 40)).toBe('data');
    expect(wav.readUInt32LE(40)).toBe(takeAudio.length);
    expect(wav.subarray(44).equals(takeAudio)).toBe(true);
    expect(readFileSync(path.join(files, `meetings/${uploadMeeting}/audio/v1.mp3`)).equals(uploaded)).toBe(true);
  });

  it('should list exports newest first, through pages', async () => {
    const second = await requestExport();
    expect(second.status).toBe(202);
    const first = await api.request('GET', '/me/exports?limit=1', { token: alice });
    expect(first.status).toBe(200);
    expect(first.body.items.map((e: { id: string }) => e.id)).toEqual([second.body.id]);
    const next = await api.request('GET', `/me/exports?limit=1&cursor=${first.body.next_cursor}`, { token: alice });
    expect(next.body.items.map((e: { id: string; status: string }) => [e.id, e.status])).toEqual([[exportId, 'ready']]);
    expect(next.body.items[0].url).toMatch(/^http/);
    expect(next.body.next_cursor).toBeNull();
    await untilReady(second.body.id);
  });
});

describe('errors', () => {
  it('should answer 401 without credentials', async () => {
    expect((await api.request('POST', '/me/exports', { headers: { 'idempotency-key': randomUUID() } })).status).toBe(
      401,
    );
    expect((await api.request('GET', '/me/exports')).status).toBe(401);
    expect((await api.request('GET', `/me/exports/${randomUUID()}`)).status).toBe(401);
  });

  it("should answer 404 for another user's export and for none", async () => {
    const mine = (await api.request('GET', '/me/exports', { token: alice })).body.items[0].id;
    const res = await getExportOf(mine, bob);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain(mine);
    expect((await getExportOf(randomUUID())).status).toBe(404);
    expect((await api.request('GET', '/me/exports', { token: bob })).body.items).toEqual([]);
  });

  it('should answer 422 to a malformed id or page size, and 400 without an Idempotency-Key', async () => {
    expect((await api.request('GET', '/me/exports/not-a-uuid', { token: alice })).status).toBe(422);
    expect((await api.request('GET', '/me/exports?limit=0', { token: alice })).status).toBe(422);
    const keyless = await api.request('POST', '/me/exports', { token: bob });
    expect(keyless.status).toBe(400);
    expect((await api.request('GET', '/me/exports', { token: bob })).body.items).toEqual([]);
  });
});

describe('a builder that dies', () => {
  it('should be restarted once its lease lapses, and complete (killed mid-archive)', async () => {
    const carol = await api.token('carol');
    const carolId = await api.userId(carol);
    const take = await createTake(api, carol);
    await storeLiveSegment(api, take, 0, 49);
    const id = (await requestExport(carol)).body.id;
    // A builder claims it and dies while the take's audio streams into the archive.
    const claimed = await runUseCase(api.rt, SERVICE, claimNextExport, LEASE_SECONDS);
    expect(claimed?.id).toBe(id);
    const killer = new AbortController();
    const outcome = await runWorkflow(api.rt, SERVICE, buildExport, {
      e: claimed!,
      signal: killer.signal,
      onFile: (p) => p.includes('/audio/') && killer.abort(new Error('killed')),
    });
    expect(outcome).toBe('retry');
    expect((await getExport(api.rt.db, carolId, id))?.status).toBe('running');
    // Nothing of the dead attempt is left in storage.
    expect(await api.rt.store.list(`exports/${carolId}/`)).toEqual([]);
    // The sweep takes it over once the lease lapses, and finishes it.
    const done = await vi.waitFor(
      async () => {
        await build();
        const e = await getExport(api.rt.db, carolId, id);
        expect(e?.status).toBe('ready');
        return e!;
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(done.attempts).toBe(2);
    const view = (await getExportOf(id, carol)).body;
    const files = await downloadAndUnzip(view.url!);
    const wav = readFileSync(path.join(files, `meetings/${take.meetingId}/audio/v1.wav`));
    expect(wav.subarray(44).equals(framesBytes(0, 49))).toBe(true);
  });

  it('should not let a builder that lost its lease finish the export', async () => {
    const dave = await api.token('dave');
    const daveId = await api.userId(dave);
    const id = (await requestExport(dave)).body.id;
    // The oldest pending export is claimed first: this one, whatever else is pending.
    await api.rt.db.query('test.age', `UPDATE account_export SET created_at = now() - interval '1 day' WHERE id = $1`, [
      id,
    ]);
    const first = (await runUseCase(api.rt, SERVICE, claimNextExport, LEASE_SECONDS))!;
    expect(first.id).toBe(id);
    await api.rt.db.query(
      'test.lapse',
      `UPDATE account_export SET lease_expires_at = now() - interval '1 second' WHERE id = $1`,
      [id],
    );
    const second = (await runUseCase(api.rt, SERVICE, claimNextExport, LEASE_SECONDS))!;
    expect(second).toMatchObject({ id, attempts: 2 });
    expect(await markExportReady(api.rt.db, first, 'exports/stale.zip', 1)).toBe(false);
    expect(await getExport(api.rt.db, daveId, id)).toMatchObject({ status: 'running', storage_path: null });
    expect(await markExportReady(api.rt.db, second, 'exports/current.zip', 1)).toBe(true);
  });

  it('should fail an export whose builders died three times', async () => {
    const erin = await api.token('erin');
    const erinId = await api.userId(erin);
    const id = (await requestExport(erin)).body.id;
    await api.rt.db.query(
      'test.abandon',
      `UPDATE account_export SET status = 'running', attempts = 3, lease_expires_at = now() - interval '1 second' WHERE id = $1`,
      [id],
    );
    expect((await build()).abandoned).toBe(1);
    expect(await getExport(api.rt.db, erinId, id)).toMatchObject({
      status: 'failed',
      error: 'export abandoned after 3 attempts',
    });
    const view = (await getExportOf(id, erin)).body;
    expect(view).toMatchObject({ status: 'failed', url: null, completed_at: expect.any(String) });
  });
});

describe('retention and erasure', () => {
  it('should delete an export and its archive past ACCOUNT_EXPORT_RETENTION_HOURS', async () => {
    const frank = await api.token('frank');
    const frankId = await api.userId(frank);
    const id = (await requestExport(frank)).body.id;
    await vi.waitFor(
      async () => {
        await build();
        expect((await getExport(api.rt.db, frankId, id))?.status).toBe('ready');
      },
      { timeout: 30_000, interval: 500 },
    );
    expect((await api.rt.store.list(`exports/${frankId}/`)).length).toBe(1);
    await api.rt.db.query(
      'test.age',
      `UPDATE account_export SET completed_at = now() - interval '73 hours' WHERE id = $1`,
      [id],
    );
    expect((await build()).expired).toBeGreaterThanOrEqual(1);
    expect((await getExportOf(id, frank)).status).toBe(404);
    expect(await api.rt.store.list(`exports/${frankId}/`)).toEqual([]);
  });

  it('should cancel unfinished exports and delete every archive on DELETE /me', async () => {
    const gina = await api.token('gina');
    const ginaId = await api.userId(gina);
    const done = (await requestExport(gina)).body.id;
    await vi.waitFor(
      async () => {
        await build();
        expect((await getExport(api.rt.db, ginaId, done))?.status).toBe('ready');
      },
      { timeout: 30_000, interval: 500 },
    );
    const pending = (await requestExport(gina)).body.id;
    const erased = await api.request('DELETE', '/me', { token: gina });
    expect([202, 204]).toContain(erased.status);
    await vi.waitFor(
      async () => {
        await runSweep(api.sweeper, { erasureMinAgeMs: 0 });
        expect(await api.rt.store.list(`exports/${ginaId}/`)).toEqual([]);
        const { rows } = await api.rt.db.query('test.rows', 'SELECT id FROM account_export WHERE user_id = $1', [
          ginaId,
        ]);
        expect(rows).toEqual([]);
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(pending).not.toBe(done);
  });
});
