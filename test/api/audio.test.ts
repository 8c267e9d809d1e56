// PUT /meetings/{id}/audio, GET /meetings/{id}/audio-url and the per-user signed playback
// proxy GET /meetings/{id}/audio, against a GCS emulator that verifies V4 signed URLs.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signAudioLink } from '@mi/lib/audio/playback-links';
import { startGcsEmulator, type GcsEmulator } from '../../emulators/gcs/server';
import { loadOrCreateSignerKey } from '../../emulators/gcs/signer-key';
import { startApi, type ApiHarness } from '../harness';
import { lockWaits, outsideClient } from '../support/lock-waits';

const MAX_UPLOAD = 65_536;
let api: ApiHarness;
let gcs: GcsEmulator;
let dir: string;
let alice: string;
let bob: string;
let aliceId: string;
let bobId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'audio-test-'));
  const keyFile = join(dir, 'signer.json');
  gcs = await startGcsEmulator({ trustedKeys: [loadOrCreateSignerKey(keyFile)] });
  api = await startApi({
    STORAGE_EMULATOR_HOST: gcs.url,
    STORAGE_SIGNER_KEY_FILE: keyFile,
    RECORDING_MAX_UPLOAD_BYTES: String(MAX_UPLOAD),
    RECORDING_AUDIO_URL_TTL_SECONDS: '600',
  });
  alice = await api.token('audio-alice');
  bob = await api.token('audio-bob');
  aliceId = (await api.request('GET', '/me', { token: alice })).body.id;
  bobId = (await api.request('GET', '/me', { token: bob })).body.id;
});

afterAll(async () => {
  await api?.close();
  await gcs?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const audio = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 7) & 0xff));

async function meeting(token = alice, sourceType = 'upload'): Promise<string> {
  const res = await api.request('POST', '/meetings', {
    token,
    headers: { 'idempotency-key': randomUUID() },
    body: { title: 'Audio', source_type: sourceType },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const upload = (id: string, raw: BodyInit, opts: { token?: string; type?: string } = {}) =>
  api.request('PUT', `/meetings/${id}/audio`, {
    token: opts.token ?? alice,
    raw,
    headers: { 'content-type': opts.type ?? 'audio/wav' },
  });

/** Ends the upload's batch pass (no ML runs here) as the ML would on failure: the file may be replaced. */
async function endPass(id: string) {
  const list = await api.request('GET', `/meetings/${id}/transcriptions`, { token: api.serviceToken });
  for (const t of list.body.items) {
    const failed = await api.request('PATCH', `/transcriptions/${t.id}`, {
      token: api.serviceToken,
      body: { status: 'failed' },
    });
    expect(failed.status).toBe(200);
  }
}

/** The proxy link as served, but against the test server (PUBLIC_BASE_URL is the default origin). */
const local = (proxyUrl: string) => {
  const u = new URL(proxyUrl);
  return `${api.url}${u.pathname}${u.search}`;
};

describe('audio upload, signed URL and proxy link', () => {
  it('should return the uploaded bytes through the signed URL and the proxy link, with Range', async () => {
    const id = await meeting();
    const bytes = audio(50_000);
    const up = await upload(id, bytes);
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({
      meeting_id: id,
      content_type: 'audio/wav',
      byte_count: 50_000,
      storage_path: expect.stringMatching(`^uploads/${id}/`),
    });

    const links = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    expect(links.status).toBe(200);
    expect(links.headers.get('cache-control')).toBe('private, no-store');
    const ttl = Date.parse(links.body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect(links.body.proxy_url.startsWith(`${api.config.PUBLIC_BASE_URL}/meetings/${id}/audio?`)).toBe(true);

    const direct = await fetch(links.body.url);
    expect(direct.status).toBe(200);
    expect(Buffer.from(await direct.arrayBuffer()).equals(bytes)).toBe(true);

    const proxied = await fetch(local(links.body.proxy_url));
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('content-type')).toBe('audio/wav');
    expect(proxied.headers.get('accept-ranges')).toBe('bytes');
    expect(proxied.headers.get('content-length')).toBe('50000');
    expect(Buffer.from(await proxied.arrayBuffer()).equals(bytes)).toBe(true);

    const part = await fetch(local(links.body.proxy_url), { headers: { range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 100-199/50000');
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
    const tail = await fetch(local(links.body.proxy_url), { headers: { range: 'bytes=-10' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(49_990))).toBe(true);
    const open = await fetch(local(links.body.proxy_url), { headers: { range: 'bytes=49995-' } });
    expect(Buffer.from(await open.arrayBuffer()).equals(bytes.subarray(49_995))).toBe(true);
    const beyond = await fetch(local(links.body.proxy_url), { headers: { range: 'bytes=50000-' } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe('bytes */50000');
  });

  it('should stream a chunked upload without a Content-Length and replace the earlier file (200)', async () => {
    const id = await meeting();
    expect((await upload(id, audio(1000))).status).toBe(201);
    await endPass(id);
    const bytes = audio(40_000);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(new Uint8Array(bytes.subarray(i, i + 8192)));
        controller.close();
      },
    });
    const replaced = await upload(id, stream, { type: 'audio/webm' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.byte_count).toBe(40_000);
    expect((await api.rt.store.list(`uploads/${id}/`)).map((o) => o.name)).toEqual([replaced.body.storage_path]);
    const links = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    const proxied = await fetch(local(links.body.proxy_url));
    expect(proxied.headers.get('content-type')).toBe('audio/webm');
    expect(Buffer.from(await proxied.arrayBuffer()).equals(bytes)).toBe(true);
  });

  // PGlite runs one transaction at a time: nothing interleaves there.
  it.skipIf(inject('database').kind !== 'native')(
    'should answer one 201 and one 409 to two concurrent first uploads, keeping one object and one pass (5 rounds)',
    async () => {
      for (let round = 0; round < 5; round++) {
        const id = await meeting();
        const answers = await Promise.all([upload(id, audio(3000)), upload(id, audio(4000))]);
        // The second finds the first's batch pass started (the meeting's lock orders them).
        expect(answers.map((a) => a.status).sort(), `round ${round}`).toEqual([201, 409]);
        const kept = (await api.rt.store.list(`uploads/${id}/`)).map((o) => o.name);
        expect(kept).toHaveLength(1); // the loser's object was deleted
        const passes = await api.request('GET', `/meetings/${id}/transcriptions`, { token: alice });
        expect(passes.body.items, `round ${round}`).toHaveLength(1);
      }
    },
  );

  // PGlite runs one transaction at a time: nothing interleaves there.
  it.skipIf(inject('database').kind !== 'native')(
    'should start one pass of two uploads both past their first check, waiting on the meeting (201 and 409)',
    async () => {
      const id = await meeting();
      // The meeting held from outside: both uploads pass the check made before storing, store
      // their file and wait for the meeting's lock; the one that gets it second must see the pass.
      const outside = await outsideClient(api);
      let answers: Awaited<ReturnType<typeof upload>>[];
      try {
        await outside.query('BEGIN');
        await outside.query('SELECT 1 FROM meeting WHERE id = $1 FOR UPDATE', [id]);
        const both = Promise.all([upload(id, audio(3000)), upload(id, audio(4000))]);
        await lockWaits(api, 2);
        await outside.query('COMMIT');
        answers = await both;
      } finally {
        await outside.end();
      }
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
      expect(await api.rt.store.list(`uploads/${id}/`)).toHaveLength(1);
      const passes = await api.request('GET', `/meetings/${id}/transcriptions`, { token: alice });
      expect(passes.body.items).toHaveLength(1);
    },
  );

  it('should refuse uploads above RECORDING_MAX_UPLOAD_BYTES (413), declared or streamed, and store nothing', async () => {
    const id = await meeting();
    expect((await upload(id, audio(MAX_UPLOAD + 1))).status).toBe(413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(8192));
        controller.close();
      },
    });
    expect((await upload(id, stream)).status).toBe(413);
    expect(await api.rt.store.list(`uploads/${id}/`)).toEqual([]);
    expect((await api.request('GET', `/meetings/${id}/audio-url`, { token: alice })).body.detail).toBe(
      'meeting has no audio',
    );
    expect((await upload(id, audio(MAX_UPLOAD))).status).toBe(201);
  });

  it('should answer 415 for a non-audio type, 409 for a recording meeting, 422 for an empty body, 404/401/403 otherwise', async () => {
    const id = await meeting();
    expect((await upload(id, audio(10), { type: 'application/octet-stream' })).status).toBe(415);
    expect((await api.request('PUT', `/meetings/${id}/audio`, { token: alice, raw: audio(10) })).status).toBe(415);
    expect((await upload(id, Buffer.alloc(0))).status).toBe(422);
    const recording = await meeting(alice, 'recording');
    expect((await upload(recording, audio(10))).status).toBe(409);
    expect((await upload(id, audio(10), { token: bob })).status).toBe(404);
    expect((await upload(randomUUID(), audio(10))).status).toBe(404);
    expect(
      (await api.request('PUT', `/meetings/${id}/audio`, { raw: audio(10), headers: { 'content-type': 'audio/wav' } }))
        .status,
    ).toBe(401);
    expect((await upload(id, audio(10), { token: api.serviceToken })).status).toBe(403);
    expect(await api.rt.store.list(`uploads/${id}/`)).toEqual([]);
  });

  it('should answer audio-url with distinct 404s, hide other users meetings, and answer the service like the owner', async () => {
    const id = await meeting();
    const noAudio = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    expect(noAudio.status).toBe(404);
    expect(noAudio.body.detail).toBe('meeting has no audio');
    const missing = await api.request('GET', `/meetings/${randomUUID()}/audio-url`, { token: alice });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBe('meeting not found');
    await upload(id, audio(100));
    expect((await api.request('GET', `/meetings/${id}/audio-url`, { token: bob })).body.detail).toBe(
      'meeting not found',
    );
    expect((await api.request('GET', `/meetings/${id}/audio-url`)).status).toBe(401);
    // The ML service (service token) is answered like the owner: the same object, the owner's proxy link.
    const owner = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    const service = await api.request('GET', `/meetings/${id}/audio-url`, { token: api.serviceToken });
    expect(service.status).toBe(200);
    expect(new URL(service.body.url).pathname).toBe(new URL(owner.body.url).pathname);
    expect((await fetch(service.body.url)).status).toBe(200);
    const proxied = await fetch(local(service.body.proxy_url));
    expect(proxied.status).toBe(200);
    expect((await api.request('GET', `/meetings/${randomUUID()}/audio-url`, { token: api.serviceToken })).status).toBe(
      404,
    );
  });

  it('should refuse tampered, expired, other-user and other-meeting links with 403', async () => {
    const id = await meeting();
    const other = await meeting();
    await upload(id, audio(100));
    await upload(other, audio(100));
    const links = await api.request('GET', `/meetings/${id}/audio-url`, { token: alice });
    const good = new URL(local(links.body.proxy_url));
    const key = api.config.AUDIO_URL_SIGNING_KEY;
    const status = async (path: string, q: Record<string, string>) =>
      (await fetch(`${api.url}${path}?${new URLSearchParams(q)}`)).status;
    const q = Object.fromEntries(good.searchParams);
    expect(await status(good.pathname, q)).toBe(200);

    const sig = q.sig;
    const tampered = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    expect(await status(good.pathname, { ...q, sig: tampered })).toBe(403);
    expect(await status(good.pathname, { ...q, exp: String(Number(q.exp) + 1) })).toBe(403);
    expect(await status(good.pathname, { ...q, uid: bobId })).toBe(403);
    expect(await status(`/meetings/${other}/audio`, q)).toBe(403);
    const past = Math.floor(Date.now() / 1000) - 1;
    expect(
      await status(good.pathname, { uid: aliceId, exp: String(past), sig: signAudioLink(key, id, aliceId, past) }),
    ).toBe(403);
    // A genuinely signed link for a user who does not own the meeting grants nothing.
    const future = Math.floor(Date.now() / 1000) + 600;
    expect(
      await status(good.pathname, { uid: bobId, exp: String(future), sig: signAudioLink(key, id, bobId, future) }),
    ).toBe(403);
    expect(await status(good.pathname, {})).toBe(403);
    expect(await status(good.pathname, { uid: 'x', exp: 'y', sig: 'z' })).toBe(403);
    // A valid link of a meeting without audio.
    const silent = await meeting();
    expect(
      await status(`/meetings/${silent}/audio`, {
        uid: aliceId,
        exp: String(future),
        sig: signAudioLink(key, silent, aliceId, future),
      }),
    ).toBe(404);
  });
});

describe('audio-url when object storage cannot sign', () => {
  it('should answer 503 unavailable with Retry-After, never a 500, and still serve the rest', async () => {
    // A signing identity that cannot sign (as when IAM refuses signBlob or no credential is found).
    const badKey = join(dir, 'unusable-signer.json');
    writeFileSync(badKey, JSON.stringify({ client_email: 'nobody@local-project.iam', private_key: 'not a key' }));
    const unsigned = await startApi({ STORAGE_EMULATOR_HOST: gcs.url, STORAGE_SIGNER_KEY_FILE: badKey });
    try {
      const token = await unsigned.token('audio-unsigned');
      const id = await unsigned.meeting(token, 'upload');
      const up = await unsigned.request('PUT', `/meetings/${id}/audio`, {
        token,
        raw: audio(100),
        headers: { 'content-type': 'audio/wav' },
      });
      expect(up.status).toBe(201);
      const links = await unsigned.request('GET', `/meetings/${id}/audio-url`, { token });
      expect(links.status).toBe(503);
      expect(links.headers.get('content-type')).toContain('application/problem+json');
      expect(links.body.type).toMatch(/\/unavailable$/);
      expect(links.headers.get('retry-after')).toBe('2');
      expect((await unsigned.request('GET', `/meetings/${id}`, { token })).status).toBe(200);
    } finally {
      await unsigned.close();
    }
  });
});
