// The client as an app developer gets it: `npm pack` of client/ (its prepack builds dist/), the
// tarball installed into a new project outside the repository (from the local npm cache), the
// docs/client.md's live snippet type-checked there under NodeNext (and the package under Bundler
// resolution), compiled and run in plain Node against the local stack: REST calls and a short
// live take that `finished` reports final (the local stack sweeps every 2 s).
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { freePort } from '@mi/lib/dev/free-port';
import { startLocalStack, type LocalStack } from '../../emulators/stack';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, maxBuffer: 16 << 20 });

let stack: LocalStack;
let dir: string;
let app: string;

/** docs/client.md's block after <!-- client-quickstart -->: the program a developer copies. */
function quickstartSnippet(): string {
  const doc = readFileSync(path.join(root, 'docs/client.md'), 'utf8');
  const block = /<!-- client-quickstart -->\n```ts\n([\s\S]*?)\n```/.exec(doc);
  if (!block) throw new Error('docs/client.md has no client-quickstart block');
  return block[1];
}

const tsconfig = (resolution: 'NodeNext' | 'Bundler', extra: object = {}) =>
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: resolution === 'NodeNext' ? 'NodeNext' : 'ESNext',
      moduleResolution: resolution,
      strict: true,
      types: ['node'],
      lib: ['ES2022'],
      ...extra,
    },
    include: ['src'],
  });

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mi-client-'));
  app = path.join(dir, 'app');
  const tag = path.basename(dir).slice(-6).toLowerCase();
  const mlPort = await freePort();
  const pack = npm(['pack', '--pack-destination', dir], path.join(root, 'client'));
  stack = await startLocalStack({
    ...inject('emulatorEnv'),
    DATA_DIR: path.join(dir, 'data'),
    CORE_PORT: '0',
    // A known free port: the live service is told the ML address before the ML service starts.
    ML_PORT: String(mlPort),
    ML_SERVICE_URL: `http://127.0.0.1:${mlPort}`,
    APP_ENV: 'development',
    LOG_LEVEL: 'warn',
    OTEL_ENABLED: 'false',
    STORAGE_BUCKET: `pkg-${tag}`,
    PUBSUB_TOPIC_EVENTS: `pkg-events-${tag}`,
    PUBSUB_TOPIC_RECORDING_FINALIZED: `pkg-finalized-${tag}`,
    // Not set: RECORDING_GAP_SWEEP_INTERVAL_SECONDS, so the local stack's own cadence is what `finished` waits for.
  });
  await pack;
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  writeFileSync(path.join(dir, 'package.json'), '{}'); // keeps npm from walking up to another project
  await run('mkdir', ['-p', path.join(app, 'src')]);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'an-app', private: true, type: 'module' }));
  // The types the snippet needs besides the client (node, ws): the versions the repository uses.
  const version = (name: string) =>
    JSON.parse(readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
  const deps = [
    path.join(dir, tarball),
    `ws@${version('ws')}`,
    `@types/ws@${version('@types/ws')}`,
    `@types/node@${version('@types/node')}`,
  ];
  await npm(['install', '--prefer-offline', ...deps], app);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the packed client', () => {
  it('should ship built ESM with declarations and declare its runtime dependency', () => {
    const installed = path.join(app, 'node_modules/@mi/client');
    const pkg = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: '@mi/client', version: expect.stringMatching(/^\d+\.\d+\.\d+/), type: 'module' });
    expect(pkg.private).toBeUndefined();
    expect(Object.keys(pkg.dependencies)).toEqual(['openapi-fetch']);
    const files = readdirSync(path.join(installed, 'dist'), { recursive: true }).map(String);
    expect(files).toEqual(
      expect.arrayContaining(['index.js', 'index.d.ts', 'schema.d.ts', path.join('live', 'recording.js')]),
    );
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // openapi-fetch was installed with it, as a dependency of the app's tree.
    expect(readdirSync(path.join(app, 'node_modules'))).toContain('openapi-fetch');
  });

  it('should load in plain Node and type-check under NodeNext and Bundler resolution', async () => {
    const { stdout } = await run(
      'node',
      [
        '--input-type=module',
        '-e',
        "const m = await import('@mi/client'); console.log(typeof m.createRestClient, typeof m.LiveRecording)",
      ],
      { cwd: app },
    );
    expect(stdout.trim()).toBe('function function');
    writeFileSync(path.join(app, 'src/app.ts'), quickstartSnippet());
    writeFileSync(path.join(app, 'tsconfig.json'), tsconfig('NodeNext', { outDir: 'dist', rootDir: 'src' }));
    writeFileSync(path.join(app, 'tsconfig.bundler.json'), tsconfig('Bundler', { noEmit: true }));
    for (const project of ['tsconfig.json', 'tsconfig.bundler.json']) {
      const checked = await run(process.execPath, [tsc, '-p', project, '--noEmit'], { cwd: app }).catch((e) => e);
      expect(`${checked.stdout}${checked.stderr}`, project).toBe('');
    }
    // A wrong call is a type error under NodeNext: the declarations are really read.
    writeFileSync(
      path.join(app, 'src/wrong.ts'),
      "import { createRestClient } from '@mi/client';\ncreateRestClient({ baseUrl: 1 });\n",
    );
    const wrong = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit'], { cwd: app }).catch((e) => e);
    rmSync(path.join(app, 'src/wrong.ts'));
    expect(wrong.stdout).toContain(
      "src/wrong.ts(2,20): error TS2322: Type 'number' is not assignable to type 'string'.",
    );
  }, 120_000);

  it("should run docs/client.md's snippet against the stack: REST, and a live take that `finished` reports final", async () => {
    // The local stack sweeps every 2 s unless told otherwise: a finished take is final a few seconds after its stop.
    expect(stack.config.RECORDING_GAP_SWEEP_INTERVAL_SECONDS).toBe(2);
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app });
    const token = await mintDevToken(stack.config.IDENTITY_SECRET_KEY!, 'package-user');
    const { stdout } = await run('node', ['dist/app.js'], {
      cwd: app,
      env: { ...process.env, MI_URL: stack.url, MI_TOKEN: token },
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^meeting [0-9a-f-]{36}; 1 on the first page\nfinalized: 20 frames stored/);
    const meetingId = /^meeting ([0-9a-f-]{36})/.exec(stdout)![1];
    const rec = await fetch(`${stack.url}/meetings/${meetingId}/recording`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await rec.json()).toMatchObject({ state: 'finalized', frames_stored: 20, missing_ranges: [] });
  }, 90_000);
});
