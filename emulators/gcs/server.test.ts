// The GCS emulator itself: the wire protocol the real client relies on, persistence,
// signed-URL trust, and fault injection. Each test starts its own emulator on a free port.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Storage } from '@google-cloud/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { createObjectStore } from '../../lib/adapters/storage';
import { startGcsEmulator, type GcsEmulator } from './server';
import { loadOrCreateSignerKey } from './signer-key';

const running: GcsEmulator[] = [];
const dirs: string[] = [];

async function emulator(opts: Parameters<typeof startGcsEmulator>[0] = {}): Promise<GcsEmulator> {
  const e = await startGcsEmulator(opts);
  running.push(e);
  return e;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gcs-emu-test-'));
  dirs.push(d);
  return d;
}

async function withBucket(e: GcsEmulator, bucket = 'emu-test'): Promise<void> {
  const res = await fetch(`${e.url}/storage/v1/b?project=p`, {
    method: 'POST',
    body: JSON.stringify({ name: bucket }),
  });
  expect(res.status).toBe(200);
}

async function mediaUpload(e: GcsEmulator, name: string, body: string, query = ''): Promise<Response> {
  return fetch(`${e.url}/upload/storage/v1/b/emu-test/o?uploadType=media&name=${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    body,
  });
}

/** The real client aimed at `e`, whatever STORAGE_EMULATOR_HOST (the shared emulator) says. */
function clientFor(e: GcsEmulator): Storage {
  const client = new Storage({ apiEndpoint: e.url, projectId: 'p' });
  client.baseUrl = `${e.url}/storage/v1`;
  return client;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('GCS emulator', () => {
  it('should keep buckets and objects across a restart with a dataDir', async () => {
    const dataDir = tempDir();
    const first = await emulator({ dataDir });
    const store1 = createObjectStore({ bucket: 'persisted', emulatorHost: first.url });
    await store1.ensureBucket();
    const kept = await store1.write('a/kept.bin', Buffer.from('kept bytes'), { contentType: 'audio/wav' });
    await store1.write('a/gone.bin', Buffer.from('deleted'));
    await store1.delete('a/gone.bin');
    await store1.write('a/streamed.bin', Readable.from([Buffer.from('part one, '), Buffer.from('part two')]));
    const composed = await store1.compose(['a/kept.bin', 'a/streamed.bin'], 'a/composed.bin');
    await first.stop();

    const second = await emulator({ dataDir });
    expect(second.url).not.toBe(first.url);
    const store2 = createObjectStore({ bucket: 'persisted', emulatorHost: second.url });
    expect(await store2.stat('a/kept.bin')).toEqual(kept);
    expect((await store2.readAll('a/kept.bin')).toString()).toBe('kept bytes');
    expect(await store2.stat('a/gone.bin')).toBeNull();
    expect(await store2.stat('a/composed.bin')).toEqual(composed);
    expect((await store2.readAll('a/composed.bin')).toString()).toBe('kept bytespart one, part two');
    const slice = await store2.read('a/composed.bin', { start: 4, end: 9 });
    let text = '';
    for await (const c of slice) text += c.toString();
    expect(text).toBe(' bytes');
    const next = await store2.write('a/kept.bin', Buffer.from('newer'));
    expect(BigInt(next.generation) > BigInt(kept.generation)).toBe(true);
  });

  it('should delete an empty bucket for good (also across a restart), and answer 409 for one with objects', async () => {
    const dataDir = tempDir();
    const first = await emulator({ dataDir });
    await withBucket(first);
    await withBucket(first, 'emu-gone');
    expect((await mediaUpload(first, 'x.txt', 'x')).status).toBe(200);
    const refused = await fetch(`${first.url}/storage/v1/b/emu-test`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error.errors[0].reason).toBe('conflict');
    expect((await fetch(`${first.url}/storage/v1/b/emu-gone`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${first.url}/storage/v1/b/emu-gone`, { method: 'DELETE' })).status).toBe(404);
    await first.stop();

    const second = await emulator({ dataDir });
    const names = (await (await fetch(`${second.url}/storage/v1/b?project=p`)).json()).items.map(
      (b: { name: string }) => b.name,
    );
    expect(names).toEqual(['emu-test']);
  });

  it('should keep nothing across a restart without a dataDir', async () => {
    const first = await emulator();
    await withBucket(first);
    await first.stop();
    const second = await emulator();
    expect((await fetch(`${second.url}/storage/v1/b/emu-test`)).status).toBe(404);
  });

  it('should answer 412 with the GCS error body when ifGenerationMatch fails, and the client reports code 412', async () => {
    const e = await emulator();
    await withBucket(e);
    expect((await mediaUpload(e, 'x', 'one', '&ifGenerationMatch=0')).status).toBe(200);
    const res = await mediaUpload(e, 'x', 'two', '&ifGenerationMatch=0');
    expect(res.status).toBe(412);
    const body = (await res.json()) as { error: { code: number; errors: { reason: string }[] } };
    expect(body.error.code).toBe(412);
    expect(body.error.errors[0].reason).toBe('conditionNotMet');

    const client = clientFor(e);
    const err = await client
      .bucket('emu-test')
      .file('x')
      .save('three', { resumable: false, preconditionOpts: { ifGenerationMatch: 0 } })
      .catch((x: unknown) => x);
    expect((err as { code?: number }).code).toBe(412);
    const notMatch = await fetch(
      `${e.url}/storage/v1/b/emu-test/o/x?ifGenerationNotMatch=${(await (await fetch(`${e.url}/storage/v1/b/emu-test/o/x`)).json()).generation}`,
    );
    expect(notMatch.status).toBe(412);
  });

  it('should run the resumable protocol: 308 with Range, status queries, final chunk, cancel', async () => {
    const e = await emulator();
    await withBucket(e);
    const init = await fetch(`${e.url}/upload/storage/v1/b/emu-test/o?uploadType=resumable&name=r.bin`, {
      method: 'POST',
      headers: { 'X-Upload-Content-Type': 'audio/wav', 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(init.status).toBe(200);
    const session = init.headers.get('location')!;
    expect(session).toContain('upload_id=');
    const part1 = Buffer.alloc(262_144, 1);
    const part2 = Buffer.alloc(1000, 2);
    const r1 = await fetch(session, { method: 'PUT', headers: { 'Content-Range': 'bytes 0-262143/*' }, body: part1 });
    expect(r1.status).toBe(308);
    expect(r1.headers.get('range')).toBe('bytes=0-262143');
    const status = await fetch(session, { method: 'PUT', headers: { 'Content-Range': 'bytes */*' } });
    expect(status.status).toBe(308);
    expect(status.headers.get('range')).toBe('bytes=0-262143');
    const r2 = await fetch(session, {
      method: 'PUT',
      headers: { 'Content-Range': 'bytes 262144-263143/263144' },
      body: part2,
    });
    expect(r2.status).toBe(200);
    expect(await r2.json()).toMatchObject({ name: 'r.bin', size: '263144', contentType: 'audio/wav' });
    const got = await fetch(`${e.url}/storage/v1/b/emu-test/o/r.bin?alt=media`);
    expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.concat([part1, part2]))).toBe(true);

    const init2 = await fetch(`${e.url}/upload/storage/v1/b/emu-test/o?uploadType=resumable&name=c.bin`, {
      method: 'POST',
    });
    const session2 = init2.headers.get('location')!;
    await fetch(session2, { method: 'PUT', headers: { 'Content-Range': 'bytes 0-9/*' }, body: Buffer.alloc(10) });
    expect((await fetch(session2, { method: 'DELETE' })).status).toBe(499);
    expect((await fetch(session2, { method: 'PUT', headers: { 'Content-Range': 'bytes */*' } })).status).toBe(404);
    expect((await fetch(`${e.url}/storage/v1/b/emu-test/o/c.bin`)).status).toBe(404);
  });

  it('should refuse a compose of more than 32 sources with 400, like GCS', async () => {
    const e = await emulator();
    await withBucket(e);
    for (let i = 0; i < 33; i++) expect((await mediaUpload(e, `s${i}`, `${i},`)).status).toBe(200);
    const compose = (n: number) =>
      fetch(`${e.url}/storage/v1/b/emu-test/o/out/compose`, {
        method: 'POST',
        body: JSON.stringify({
          destination: { contentType: 'text/plain' },
          sourceObjects: Array.from({ length: n }, (_, i) => ({ name: `s${i}` })),
        }),
      });
    const tooMany = await compose(33);
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: { message: string } }).error.message).toContain(
      '(33) exceeds the maximum (32)',
    );
    const ok = await compose(32);
    expect(ok.status).toBe(200);
    const meta = (await ok.json()) as { componentCount: number; md5Hash?: string };
    expect(meta.componentCount).toBe(32);
    expect(meta.md5Hash).toBeUndefined(); // composite objects carry no MD5 in GCS
    const text = await (await fetch(`${e.url}/storage/v1/b/emu-test/o/out?alt=media`)).text();
    expect(text).toBe(Array.from({ length: 32 }, (_, i) => `${i},`).join(''));
  });

  it('should serve suffix ranges and answer 416 for a range past the end', async () => {
    const e = await emulator();
    await withBucket(e);
    await mediaUpload(e, 'r', '0123456789');
    const url = `${e.url}/download/storage/v1/b/emu-test/o/r?alt=media`;
    const tail = await fetch(url, { headers: { Range: 'bytes=-3' } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe('bytes 7-9/10');
    expect(await tail.text()).toBe('789');
    const past = await fetch(url, { headers: { Range: 'bytes=10-' } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */10');
  });

  it('should page listings and group by delimiter for the real client', async () => {
    const e = await emulator();
    await withBucket(e);
    for (const n of ['p/1', 'p/2', 'p/3', 'p/4', 'p/5', 'p/d/x', 'p/d/y', 'q/1']) await mediaUpload(e, n, n);
    const bucket = clientFor(e).bucket('emu-test');
    const names: string[] = [];
    let query: Record<string, unknown> | null = { prefix: 'p/', maxResults: 2, autoPaginate: false };
    let pages = 0;
    while (query) {
      const [files, next]: [{ name: string }[], Record<string, unknown> | null, unknown] = (await bucket.getFiles(
        query,
      )) as never;
      names.push(...files.map((f) => f.name));
      query = next;
      pages++;
    }
    expect(names).toEqual(['p/1', 'p/2', 'p/3', 'p/4', 'p/5', 'p/d/x', 'p/d/y']);
    expect(pages).toBe(4);
    const res = await fetch(`${e.url}/storage/v1/b/emu-test/o?prefix=p/&delimiter=/`);
    const listing = (await res.json()) as { items: { name: string }[]; prefixes: string[] };
    expect(listing.items.map((i) => i.name)).toEqual(['p/1', 'p/2', 'p/3', 'p/4', 'p/5']);
    expect(listing.prefixes).toEqual(['p/d/']);
  });

  it('should serve the client when STORAGE_EMULATOR_HOST is how it is pointed here', async () => {
    const e = await emulator();
    await withBucket(e);
    const saved = process.env.STORAGE_EMULATOR_HOST;
    process.env.STORAGE_EMULATOR_HOST = e.url;
    try {
      const bucket = new Storage({ projectId: 'p' }).bucket('emu-test');
      await bucket.file('env/obj').save('via env', { resumable: true });
      const [bytes] = await bucket.file('env/obj').download();
      expect(bytes.toString()).toBe('via env');
      const [files] = await bucket.getFiles({ prefix: 'env/' });
      expect(files.map((f) => f.name)).toEqual(['env/obj']);
    } finally {
      if (saved === undefined) delete process.env.STORAGE_EMULATOR_HOST;
      else process.env.STORAGE_EMULATOR_HOST = saved;
    }
  });

  it('should accept signed URLs only from trusted keys, including keys trusted later', async () => {
    const e = await emulator();
    await withBucket(e);
    await mediaUpload(e, 'signed/obj', 'signed bytes');
    const dir = tempDir();
    const signer = loadOrCreateSignerKey(join(dir, 'key.json'));
    expect(loadOrCreateSignerKey(join(dir, 'key.json'))).toEqual(signer); // same key on the next start
    const store = createObjectStore({ bucket: 'emu-test', emulatorHost: e.url, signerKeyFile: join(dir, 'key.json') });
    const { url } = await store.signedReadUrl('signed/obj', 60);
    const untrusted = await fetch(url);
    expect(untrusted.status).toBe(403);
    expect(await untrusted.text()).toContain('<Code>AccessDenied</Code>');
    e.trustKey(signer);
    const trusted = await fetch(url);
    expect(trusted.status).toBe(200);
    expect(await trusted.text()).toBe('signed bytes');
    const stranger = loadOrCreateSignerKey();
    e.trustKey({ client_email: signer.client_email, public_key_pem: stranger.public_key_pem });
    expect((await fetch(url)).status).toBe(403); // signed by a key that is no longer the trusted one
    // Only the served read is listed (the conformance kit's proof that an ML read a take's audio).
    const reads = (await (await fetch(`${e.url}/_emulator/signed-reads`)).json()) as { reads: unknown[] };
    expect(reads.reads).toEqual([{ bucket: 'emu-test', object: 'signed/obj', at: expect.any(String) }]);
  });

  it('should inject 503s for matching requests only, count them down, and clear them', async () => {
    const e = await emulator();
    await withBucket(e);
    await mediaUpload(e, 'f/one', '1');
    await mediaUpload(e, 'f/two', '2');
    const faults = `${e.url}/_emulator/faults`;
    expect(
      (await fetch(faults, { method: 'POST', body: JSON.stringify({ mode: 'error503', count: 2, match: 'f/one' }) }))
        .status,
    ).toBe(200);
    const get = (n: string) => fetch(`${e.url}/storage/v1/b/emu-test/o/${encodeURIComponent(n)}`);
    expect((await get('f/two')).status).toBe(200);
    const first = await get('f/one');
    expect(first.status).toBe(503);
    expect(((await first.json()) as { error: { code: number } }).error.code).toBe(503);
    expect((await get('f/one')).status).toBe(503);
    expect((await get('f/one')).status).toBe(200);

    await fetch(faults, { method: 'POST', body: JSON.stringify({ mode: 'error503', count: 5 }) });
    expect((await fetch(faults, { method: 'DELETE' })).status).toBe(200);
    expect((await get('f/one')).status).toBe(200);
    expect((await fetch(faults, { method: 'POST', body: JSON.stringify({ mode: 'explode' }) })).status).toBe(400);
  });

  it('should stall matching requests for stall_ms and then answer normally', async () => {
    const e = await emulator();
    await withBucket(e);
    await mediaUpload(e, 'slow', 'zzz');
    await fetch(`${e.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'stall', stall_ms: 400, match: 'slow' }),
    });
    const t0 = Date.now();
    const res = await fetch(`${e.url}/storage/v1/b/emu-test/o/slow?alt=media`);
    expect(await res.text()).toBe('zzz');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(380);
    const t1 = Date.now();
    await fetch(`${e.url}/storage/v1/b/emu-test/o/slow?alt=media`);
    expect(Date.now() - t1).toBeLessThan(300);
  });
});
