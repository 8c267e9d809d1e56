// The real `gcloud storage` CLI against the GCS emulator: uploads by each of its paths, listings,
// reads and deletes. gcloud is a separate Python client with its own wire habits (apitools), so
// it finds what @google-cloud/storage does not (quoted multipart boundaries, LF line breaks,
// the /resumable/upload/ path).
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGcsEmulator, type GcsEmulator } from './server';

let emulator: GcsEmulator;
let dir: string;

beforeAll(async () => {
  emulator = await startGcsEmulator();
  dir = mkdtempSync(join(tmpdir(), 'gcloud-cli-test-'));
});

afterAll(async () => {
  await emulator.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs `gcloud storage ...` against the emulator. Properties come from CLOUDSDK_* variables and
 * the configuration directory is a fresh one, so the user's gcloud setup is neither read nor
 * changed. Asynchronous on purpose: the emulator answers from this same process.
 */
function gcloudStorage(args: string[], opts: { input?: Buffer; env?: Record<string, string> } = {}): Promise<Run> {
  const inherited = Object.entries(process.env).filter(([k]) => !k.startsWith('CLOUDSDK_'));
  const env = {
    ...Object.fromEntries(inherited),
    CLOUDSDK_CONFIG: join(dir, 'gcloud-config'),
    CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE: `${emulator.url}/`, // gcloud appends storage/v1/... as is
    CLOUDSDK_AUTH_DISABLE_CREDENTIALS: 'true', // anonymous requests; the emulator checks no token
    CLOUDSDK_CORE_PROJECT: 'emulator',
    CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
    CLOUDSDK_STORAGE_PROCESS_COUNT: '1', // the test machine's cores are shared
    ...opts.env,
  };
  return new Promise((resolve, reject) => {
    const child = spawn('gcloud', ['storage', ...args], { env });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve({ stdout: Buffer.concat(out), stderr });
      else reject(new Error(`gcloud storage ${args.join(' ')} exited with ${code}:\n${stderr}`));
    });
    child.stdin.end(opts.input);
  });
}

const lines = (r: Run) => r.stdout.toString().split('\n').filter(Boolean);

/** A fresh bucket made through the JSON API, so that each test starts from an empty one. */
async function newBucket(): Promise<string> {
  const name = `cli-${randomUUID().slice(0, 8)}`;
  const res = await fetch(`${emulator.url}/storage/v1/b?project=emulator`, {
    method: 'POST',
    body: JSON.stringify({ name }),
  });
  expect(res.status).toBe(200);
  return name;
}

function localFile(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** A local directory named `name` holding the given relative paths, each a few bytes long. */
function localTree(name: string, paths: string[]): string {
  const root = join(dir, name);
  for (const p of paths) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), `contents of ${p}`);
  }
  return root;
}

describe('gcloud storage against the GCS emulator', () => {
  it('should create a bucket and list it with buckets list and ls', async () => {
    const name = `cli-made-${randomUUID().slice(0, 8)}`;
    await gcloudStorage(['buckets', 'create', `gs://${name}`]);
    expect(lines(await gcloudStorage(['buckets', 'list', '--format=value(name)']))).toContain(name);
    expect(lines(await gcloudStorage(['ls']))).toContain(`gs://${name}/`);
  }, 60_000);

  it('should round-trip a small file (a multipart upload) with CRLF, "--" lines and no final newline', async () => {
    const bucket = await newBucket();
    // Bytes a multipart parser could get wrong: line breaks of both kinds and a boundary-like line.
    const bytes = Buffer.from('first line\r\n--not a boundary\n\nlast line, no newline');
    await gcloudStorage(['cp', localFile('small.txt', bytes), `gs://${bucket}/notes/small.txt`]);
    expect((await gcloudStorage(['cat', `gs://${bucket}/notes/small.txt`])).stdout).toEqual(bytes);
  }, 60_000);

  it('should round-trip a file above the resumable threshold through a resumable upload', async () => {
    const bucket = await newBucket();
    const bytes = randomBytes(1024 * 1024 + 7);
    const upload = await gcloudStorage(
      ['cp', localFile('big.bin', bytes), `gs://${bucket}/audio/big.bin`, '--log-http'],
      {
        env: { CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD: '256KiB' },
      },
    );
    expect(upload.stderr).toContain(`/resumable/upload/storage/v1/b/${bucket}/o?`);
    const back = join(dir, 'big.back.bin');
    await gcloudStorage(['cp', `gs://${bucket}/audio/big.bin`, back]);
    expect(readFileSync(back).equals(bytes)).toBe(true);
  }, 60_000);

  it('should round-trip a stream from stdin sent as several resumable chunks', async () => {
    const bucket = await newBucket();
    const bytes = randomBytes(600 * 1024); // three chunks of 256 KiB, the last one short
    const upload = await gcloudStorage(['cp', '-', `gs://${bucket}/audio/stream.bin`, '--log-http'], {
      input: bytes,
      env: { CLOUDSDK_STORAGE_UPLOAD_CHUNK_SIZE: '256KiB' },
    });
    expect(upload.stderr.match(/^status: 308$/gm)).toHaveLength(2); // two chunks acknowledged before the last
    expect((await gcloudStorage(['cat', `gs://${bucket}/audio/stream.bin`])).stdout.equals(bytes)).toBe(true);
  }, 60_000);

  it('should list objects and prefixes level by level, and recursively', async () => {
    const bucket = await newBucket();
    await gcloudStorage([
      'cp',
      '--recursive',
      localTree('site', ['a.txt', 'notes/b.txt', 'notes/deep/c.txt', 'notes/deep/d.txt']),
      `gs://${bucket}`,
    ]);
    const url = (name: string) => `gs://${bucket}/${name}`;
    expect(lines(await gcloudStorage(['ls', url('')]))).toEqual([url('site/')]);
    expect(lines(await gcloudStorage(['ls', url('site/')]))).toEqual([url('site/a.txt'), url('site/notes/')]);
    expect(lines(await gcloudStorage(['ls', url('site/notes/')]))).toEqual([
      url('site/notes/b.txt'),
      url('site/notes/deep/'),
    ]);
    expect(lines(await gcloudStorage(['ls', url('**')]))).toEqual(
      ['a.txt', 'notes/b.txt', 'notes/deep/c.txt', 'notes/deep/d.txt'].map((n) => url(`site/${n}`)),
    );
  }, 90_000);

  it('should remove one object, then everything under a prefix', async () => {
    const bucket = await newBucket();
    await gcloudStorage([
      'cp',
      '--recursive',
      localTree('doomed', ['keep.txt', 'one.txt', 'tmp/x.txt', 'tmp/y/z.txt']),
      `gs://${bucket}`,
    ]);
    await gcloudStorage(['rm', `gs://${bucket}/doomed/one.txt`]);
    await gcloudStorage(['rm', '--recursive', `gs://${bucket}/doomed/tmp`]);
    expect(lines(await gcloudStorage(['ls', `gs://${bucket}/**`]))).toEqual([`gs://${bucket}/doomed/keep.txt`]);
    await expect(gcloudStorage(['cat', `gs://${bucket}/doomed/one.txt`])).rejects.toThrow(/matched no objects/);
  }, 90_000);

  it('should delete an empty bucket, refuse one that holds objects, and delete a bucket with its objects by rm --recursive', async () => {
    const name = `cli-gone-${randomUUID().slice(0, 8)}`;
    await gcloudStorage(['buckets', 'create', `gs://${name}`]);
    await gcloudStorage(['cp', localFile('kept.txt', Buffer.from('kept')), `gs://${name}/kept.txt`]);
    // GCS deletes empty buckets only; the CLI reports the 409.
    await expect(gcloudStorage(['buckets', 'delete', `gs://${name}`])).rejects.toThrow(/not empty/);
    expect(lines(await gcloudStorage(['buckets', 'list', '--format=value(name)']))).toContain(name);
    await gcloudStorage(['rm', `gs://${name}/kept.txt`]);
    await gcloudStorage(['buckets', 'delete', `gs://${name}`]);
    expect(lines(await gcloudStorage(['buckets', 'list', '--format=value(name)']))).not.toContain(name);
    await expect(gcloudStorage(['ls', `gs://${name}`])).rejects.toThrow(/not found|does not exist|404/i);
    expect((await fetch(`${emulator.url}/storage/v1/b/${name}`)).status).toBe(404);

    const full = await newBucket();
    await gcloudStorage(['cp', '--recursive', localTree('whole', ['a.txt', 'b/c.txt']), `gs://${full}`]);
    await gcloudStorage(['rm', '--recursive', `gs://${full}`]);
    expect(lines(await gcloudStorage(['buckets', 'list', '--format=value(name)']))).not.toContain(full);
  }, 120_000);
});
