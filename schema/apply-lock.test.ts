// `db:apply` on the embedded database refuses a DATA_DIR another process holds (the local stack:
// a second writer would corrupt PGlite's files), and takes over the lock of a holder that died.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { lockFile } from '../lib/db/data-dir-lock';

const ROOT = path.resolve(import.meta.dirname, '..');
const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-apply-lock-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function dbApply(): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'schema/apply.ts'], { cwd: ROOT, env }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Another process that takes DATA_DIR as the stack does, and keeps it until killed. */
async function holder() {
  const code = `import { lockDataDir } from './lib/db/data-dir-lock.ts'; lockDataDir(${JSON.stringify(dataDir)}, 'npm start'); console.log('locked'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => l === 'locked' && resolve());
    child.once('exit', (c) => reject(new Error(`holder exited ${c}`)));
  });
  return child;
}

describe('db:apply and a DATA_DIR in use', () => {
  it('should refuse while another process holds DATA_DIR, naming it, and touch nothing', async () => {
    const held = await holder();
    try {
      const run = await dbApply();
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`DATA_DIR ${dataDir} is in use by npm start (pid ${held.pid})`);
      expect(existsSync(path.join(dataDir, 'pg'))).toBe(false);
    } finally {
      held.kill('SIGKILL');
      await new Promise((r) => held.once('exit', r));
    }
  }, 60_000);

  it('should take over the lock of a holder that died, apply the schema and release the lock', async () => {
    expect(existsSync(lockFile(dataDir))).toBe(true); // left behind by the SIGKILL above
    const run = await dbApply();
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('-- empty database: running schema.sql');
    expect(existsSync(lockFile(dataDir))).toBe(false);
  }, 120_000);
});
