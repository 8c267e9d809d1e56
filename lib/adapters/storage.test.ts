// The storage adapter, through the real @google-cloud/storage client, against the in-repo
// GCS emulator started here on a free port.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CRC32C } from '@google-cloud/storage';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGcsEmulator, type GcsEmulator } from '../../emulators/gcs/server';
import { freePort } from '../dev/free-port';
import { loadOrCreateSignerKey } from '../../emulators/gcs/signer-key';
import {
  COMPOSE_TEMP_PREFIX,
  createObjectStore,
  ObjectExistsError,
  ObjectNotFoundError,
  ObjectTooLargeError,
  StorageUnavailableError,
  type ObjectStore,
} from './storage';

const md5 = (b: Buffer) => createHash('md5').update(b).digest('base64');
const crc32c = (b: Buffer) => {
  const c = new CRC32C();
  c.update(b);
  return c.toString();
};
const bytes = (n: number, seed = 1) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff));

/** A stream of `total` bytes in 64 KiB chunks, produced as it is read. */
function streamOf(total: number, seed = 1): { stream: Readable; expected: Buffer } {
  const expected = bytes(total, seed);
  async function* gen() {
    for (let i = 0; i < total; i += 65_536) yield expected.subarray(i, Math.min(total, i + 65_536));
  }
  return { stream: Readable.from(gen()), expected };
}

async function drain(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

let emulator: GcsEmulator;
let store: ObjectStore;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'storage-test-'));
  const keyFile = join(dir, 'signer.json');
  const signer = loadOrCreateSignerKey(keyFile);
  emulator = await startGcsEmulator({ trustedKeys: [signer] });
  store = createObjectStore({ bucket: 'storage-test', emulatorHost: emulator.url, signerKeyFile: keyFile });
  await store.ensureBucket();
});

afterAll(async () => {
  await emulator?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ObjectStore on the GCS emulator', () => {
  it('should create the bucket once and accept ensureBucket again', async () => {
    await expect(store.ensureBucket()).resolves.toBeUndefined();
    const res = await fetch(`${emulator.url}/storage/v1/b/storage-test`);
    expect(res.status).toBe(200);
  });

  it('should upload a buffer and report size, generation, crc32c and md5 as computed locally', async () => {
    const body = bytes(10_000);
    const written = await store.write('buf/one.bin', body, { contentType: 'audio/wav' });
    expect(written).toMatchObject({
      name: 'buf/one.bin',
      size: 10_000,
      crc32c: crc32c(body),
      md5Hash: md5(body),
      contentType: 'audio/wav',
    });
    expect(written.generation).toMatch(/^\d+$/);
    expect(await store.stat('buf/one.bin')).toEqual(written);
    expect((await store.readAll('buf/one.bin')).equals(body)).toBe(true);
  });

  it('should store a buffer with the CRC32C it was given, and refuse the write when the bytes do not match it', async () => {
    const body = bytes(5_000);
    expect(await store.write('buf/checked.bin', body, { crc32c: crc32c(body), createOnly: true })).toMatchObject({
      size: 5_000,
      crc32c: crc32c(body),
    });
    const other = bytes(5_000, 9);
    await expect(store.write('buf/mismatch.bin', other, { crc32c: crc32c(body) })).rejects.toThrow(/CRC32C/i);
    expect(await store.stat('buf/mismatch.bin')).toBeNull();
  });

  it('should upload a stream through a resumable upload of several chunks', async () => {
    const { stream, expected } = streamOf(9 * 1024 * 1024 + 123, 2);
    const written = await store.write('stream/big.bin', stream, { contentType: 'application/octet-stream' });
    expect(written).toMatchObject({ size: expected.length, crc32c: crc32c(expected), md5Hash: md5(expected) });
    expect((await store.readAll('stream/big.bin')).equals(expected)).toBe(true);
  });

  it('should upload an empty stream as an empty object', async () => {
    const written = await store.write('stream/empty.bin', Readable.from([]));
    expect(written).toMatchObject({ size: 0, crc32c: crc32c(Buffer.alloc(0)) });
  });

  it('should refuse a create-only write of an existing object, buffer or stream, and keep the first bytes', async () => {
    const first = await store.write('segments/0001', Buffer.from('first'), { createOnly: true });
    await expect(store.write('segments/0001', Buffer.from('second'), { createOnly: true })).rejects.toBeInstanceOf(
      ObjectExistsError,
    );
    await expect(
      store.write('segments/0001', Readable.from([Buffer.from('third')]), { createOnly: true }),
    ).rejects.toBeInstanceOf(ObjectExistsError);
    expect((await store.readAll('segments/0001')).toString()).toBe('first');
    expect((await store.stat('segments/0001'))?.generation).toBe(first.generation);
  });

  it('should overwrite only when ifGenerationMatch names the live generation', async () => {
    const v1 = await store.write('gen/obj', Buffer.from('v1'));
    const v2 = await store.write('gen/obj', Buffer.from('v2'), { ifGenerationMatch: v1.generation });
    expect(BigInt(v2.generation) > BigInt(v1.generation)).toBe(true);
    await expect(
      store.write('gen/obj', Buffer.from('v3'), { ifGenerationMatch: v1.generation }),
    ).rejects.toBeInstanceOf(ObjectExistsError);
    expect((await store.readAll('gen/obj')).toString()).toBe('v2');
  });

  it('should read a byte range, an open-ended range and the whole object', async () => {
    const body = bytes(1000, 3);
    await store.write('range/obj', body);
    expect((await drain(await store.read('range/obj', { start: 10, end: 19 }))).equals(body.subarray(10, 20))).toBe(
      true,
    );
    expect((await drain(await store.read('range/obj', { start: 990 }))).equals(body.subarray(990))).toBe(true);
    expect((await drain(await store.read('range/obj'))).equals(body)).toBe(true);
  });

  it('should throw ObjectNotFoundError for a missing object and stat it as null', async () => {
    await expect(store.read('missing/obj')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(store.readAll('missing/obj')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await store.stat('missing/obj')).toBeNull();
  });

  it('should list the objects under a prefix only', async () => {
    await Promise.all(['list/a/1', 'list/a/2', 'list/b/1', 'list/a-not'].map((n) => store.write(n, Buffer.from(n))));
    const listed = await store.list('list/a/');
    expect(listed.map((o) => o.name)).toEqual(['list/a/1', 'list/a/2']);
    expect(listed[0]).toMatchObject({ size: 8, crc32c: crc32c(Buffer.from('list/a/1')) });
  });

  it('should delete an object, and deleting it again is fine', async () => {
    await store.write('del/obj', Buffer.from('x'));
    await store.delete('del/obj');
    expect(await store.stat('del/obj')).toBeNull();
    await expect(store.delete('del/obj')).resolves.toBeUndefined();
  });

  it('should compose two objects into their concatenation', async () => {
    const a = bytes(500, 4);
    const b = bytes(700, 5);
    await store.write('compose2/a', a);
    await store.write('compose2/b', b);
    const out = await store.compose(['compose2/a', 'compose2/b'], 'compose2/out', { contentType: 'audio/wav' });
    const both = Buffer.concat([a, b]);
    expect(out).toMatchObject({ name: 'compose2/out', size: 1200, crc32c: crc32c(both), contentType: 'audio/wav' });
    expect((await store.readAll('compose2/out')).equals(both)).toBe(true);
  });

  it('should compose 70 objects in order through temporaries that are gone afterwards', async () => {
    const names = Array.from({ length: 70 }, (_, i) => `compose70/seg-${String(i).padStart(3, '0')}`);
    const parts = names.map((_, i) => bytes(100 + i, i));
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(names.slice(i, i + 10).map((n, j) => store.write(n, parts[i + j])));
    }
    // Reversed order proves that the order given is kept, not the name order.
    const order = [...names].reverse();
    const expected = Buffer.concat([...parts].reverse());
    const out = await store.compose(order, 'compose70/out');
    expect(out).toMatchObject({ size: expected.length, crc32c: crc32c(expected) });
    expect((await store.readAll('compose70/out')).equals(expected)).toBe(true);
    expect(await store.list(COMPOSE_TEMP_PREFIX)).toEqual([]);
    expect((await store.list('compose70/')).length).toBe(71);
  });

  it('should fail a compose with a missing source with ObjectNotFoundError and leave no temporaries', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `composebad/${i}`);
    await Promise.all(names.slice(0, 39).map((n) => store.write(n, Buffer.from(n))));
    await expect(store.compose(names, 'composebad/out')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await store.stat('composebad/out')).toBeNull();
    expect(await store.list(COMPOSE_TEMP_PREFIX)).toEqual([]);
  });

  it('should fail a whole-object read whose bytes do not match its CRC32C, and serve a range unchecked', async () => {
    // An emulator of its own, on disk, so that the test can rot an object's bytes under it.
    const dataDir = join(dir, 'rot');
    const local = await startGcsEmulator({ dataDir });
    try {
      const s = createObjectStore({ bucket: 'storage-rot', emulatorHost: local.url });
      await s.ensureBucket();
      const stored = await s.write('rot.bin', bytes(5000));
      writeFileSync(join(dataDir, 'blobs', stored.generation), Buffer.alloc(5000, 1));
      await expect(drain(await s.read('rot.bin'))).rejects.toThrow(/do not match its CRC32C/);
      expect(await drain(await s.read('rot.bin', { start: 0, end: 9 }))).toEqual(Buffer.alloc(10, 1));
    } finally {
      await local.stop();
    }
  });

  it('should abort a stream over maxBytes with ObjectTooLargeError and leave no object', async () => {
    const { stream } = streamOf(1024 * 1024, 6);
    await expect(store.write('big/too-large', stream, { maxBytes: 200_000 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
    expect(await store.stat('big/too-large')).toBeNull();
    // Over the limit only after a first 8 MiB chunk reached the server.
    const { stream: later } = streamOf(9 * 1024 * 1024, 6);
    await expect(store.write('big/too-large', later, { maxBytes: 8.5 * 1024 * 1024 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
    expect(await store.stat('big/too-large')).toBeNull();
    await expect(store.write('big/too-large', bytes(2000), { maxBytes: 1000 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    );
    expect(await store.stat('big/too-large')).toBeNull();
    const { stream: fits, expected } = streamOf(200_000, 7);
    expect((await store.write('big/fits', fits, { maxBytes: 200_000 })).size).toBe(expected.length);
  });

  it('should hand out a signed URL that plain fetch can read, whole and by range', async () => {
    const body = bytes(4096, 8);
    await store.write('signed/audio.wav', body, { contentType: 'audio/wav' });
    const { url, expiresAt } = await store.signedReadUrl('signed/audio.wav', 600);
    expect(url.startsWith(`${emulator.url}/storage-test/signed/audio.wav?`)).toBe(true);
    expect(new URL(url).searchParams.get('X-Goog-Algorithm')).toBe('GOOG4-RSA-SHA256');
    expect(Math.abs(expiresAt.getTime() - (Date.now() + 600_000))).toBeLessThan(2000);
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await whole.arrayBuffer()).equals(body)).toBe(true);
    const part = await fetch(url, { headers: { Range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 100-199/4096');
    expect(Buffer.from(await part.arrayBuffer()).equals(body.subarray(100, 200))).toBe(true);
    const oddName = 'signed/a b+ü(1)~*.wav';
    await store.write(oddName, Buffer.from('odd'));
    expect(await (await fetch((await store.signedReadUrl(oddName, 60)).url)).text()).toBe('odd');
  });

  it('should report a signature it cannot make as storage unavailable, not as an unknown error', async () => {
    await store.write('signed/unsignable', Buffer.from('x'));
    const badKey = join(dir, 'bad-signer.json');
    writeFileSync(badKey, JSON.stringify({ client_email: 'nobody@local-project.iam', private_key: 'not a key' }));
    const unsigned = createObjectStore({ bucket: 'storage-test', emulatorHost: emulator.url, signerKeyFile: badKey });
    const err = await unsigned.signedReadUrl('signed/unsignable', 60).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageUnavailableError);
    expect((err as Error).message).toContain('cannot sign a read URL');
  });

  it('should reject a tampered signed URL', async () => {
    await store.write('signed/secret', Buffer.from('secret'));
    await store.write('signed/other', Buffer.from('other'));
    const { url } = await store.signedReadUrl('signed/secret', 600);
    const u = new URL(url);
    const sig = u.searchParams.get('X-Goog-Signature')!;
    u.searchParams.set('X-Goog-Signature', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1));
    const badSig = await fetch(u);
    expect(badSig.status).toBe(403);
    expect(await badSig.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
    const otherObject = await fetch(url.replace('/signed/secret?', '/signed/other?'));
    expect(otherObject.status).toBe(403);
    const longer = new URL(url);
    longer.searchParams.set('X-Goog-Expires', '604800');
    expect((await fetch(longer)).status).toBe(403);
  });

  it('should stop serving a signed URL once it expired', async () => {
    await store.write('signed/short', Buffer.from('short-lived'));
    const { url } = await store.signedReadUrl('signed/short', 1);
    // Polled until the 1 s expiry this test set has passed; the answer is then the expired one.
    await vi.waitFor(
      async () => {
        const res = await fetch(url);
        expect(res.status).toBe(400);
        expect(await res.text()).toContain('<Code>ExpiredToken</Code>');
      },
      { timeout: 10_000, interval: 200 },
    );
  });

  it('should ride out one injected 503 through the client retry', async () => {
    await store.write('faulty/obj', Buffer.from('still here'));
    const set = await fetch(`${emulator.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'error503', count: 1, match: 'faulty/obj' }),
    });
    expect(set.status).toBe(200);
    expect((await store.stat('faulty/obj'))?.size).toBe(10);
    const left = (await (await fetch(`${emulator.url}/_emulator/faults`)).json()) as { faults: unknown[] };
    expect(left.faults).toEqual([]); // the fault was spent on the stat
  });

  it('should send a buffer again when storage answers 503, and store it once', async () => {
    const set = await fetch(`${emulator.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'error503', count: 2, match: 'faulty/buffer' }),
    });
    expect(set.status).toBe(200);
    const body = bytes(3_200, 4);
    const written = await store.write('faulty/buffer', body, { createOnly: true, crc32c: crc32c(body) });
    expect(written).toMatchObject({ name: 'faulty/buffer', size: 3_200, crc32c: crc32c(body), md5Hash: md5(body) });
    expect((await store.readAll('faulty/buffer')).equals(body)).toBe(true);
    const left = (await (await fetch(`${emulator.url}/_emulator/faults`)).json()) as { faults: unknown[] };
    expect(left.faults).toEqual([]); // both 503s were answers to the write
  });

  it('should report a buffer write that storage never answers as unavailable', async () => {
    const nobody = createObjectStore({ bucket: 'storage-test', emulatorHost: `http://127.0.0.1:${await freePort()}` });
    await expect(nobody.write('gone/obj', Buffer.from('lost'))).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});
