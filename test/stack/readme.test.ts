// README.md's "With the stack running" commands, run as written against a started stack, on a
// PATH holding only node, npm, curl and a shell (what a bare machine with Node has): the test
// reads them from README.md, so it fails when the README drifts. Also what the README promises
// around them: `/` opens the console, `db:apply` refuses the DATA_DIR the stack holds.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT, spawnNpmStart, untilReady, type NpmStart } from './npm-start';
import { processTree, running } from './processes';

const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-readme-'));
const bin = mkdtempSync(path.join(tmpdir(), 'mi-readme-bin-'));
let stack: NpmStart;

beforeAll(async () => {
  for (const tool of ['node', 'npm', 'curl', 'sh', 'bash']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(found, path.join(bin, tool));
  }
  stack = await spawnNpmStart({ ...inject('emulatorEnv'), DATA_DIR: dataDir, STORAGE_BUCKET: 'readme-test' });
  await untilReady(stack);
}, 180_000);

afterAll(async () => {
  if (stack) {
    process.kill(-stack.child.pid!, 'SIGINT'); // Ctrl-C
    await stack.exited;
    for (const pid of processTree(stack.child.pid!).filter(running)) process.kill(pid, 'SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

/** The ```sh block of README.md that follows the given line. */
function readmeBlock(after: string): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(after);
  expect(at, `README.md has no "${after}"`).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  return block![1];
}

function bash(script: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(path.join(bin, 'bash'), ['-c', script], { cwd: ROOT, env }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('README examples', () => {
  it('should run the "With the stack running" commands on a bare PATH, every request succeeding', async () => {
    const block = readmeBlock('With the stack running');
    expect(block).toContain('curl');
    const commands = block.replaceAll('localhost:4002', `localhost:${stack.port}`);
    // Any failing command or HTTP error status fails the script (curl's -s hides neither here).
    const script = `set -euo pipefail\ncurl() { command curl --fail-with-body --show-error "$@"; echo; }\n${commands}`;
    const run = await bash(script, { PATH: bin, HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir });
    expect(run.stderr).not.toMatch(/command not found/);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const answers = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(answers[0]).toEqual({ status: 'ok' });
    expect(answers[1]).toHaveProperty('id');
    expect(answers[2]).toMatchObject({ title: 'Weekly sync', source_type: 'recording' });
  }, 120_000);

  it('should redirect / to the developer console', async () => {
    const res = await fetch(`${stack.url}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console');
    expect((await fetch(`${stack.url}/`)).headers.get('content-type')).toContain('text/html');
  });

  it('should refuse db:apply on the DATA_DIR the stack holds', async () => {
    const run = await bash('npm run -s db:apply', { PATH: bin, HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(new RegExp(`DATA_DIR ${dataDir} is in use by npm start \\(pid \\d+\\)`));
  }, 60_000);
});
