// `npm start` checks its configuration and its port before starting anything: a bad CORE_PORT or
// one in use fails first, naming CORE_PORT, and no emulator is started.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnNpmStart } from './npm-start';

const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-checks-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
// The stack's own emulators, not the run's: a late check would show as an emulator started first.
const own = {
  DATA_DIR: dataDir,
  PUBSUB_EMULATOR_HOST: undefined,
  FIRESTORE_EMULATOR_HOST: undefined,
  STORAGE_EMULATOR_HOST: undefined,
};

async function failedStart(env: Record<string, string | undefined>) {
  const s = await spawnNpmStart({ ...own, ...env });
  const code = await s.exited;
  return { code, output: s.output() };
}

describe('npm start checks first', () => {
  it('should reject a malformed CORE_PORT at once, naming it, before any emulator', async () => {
    const run = await failedStart({ CORE_PORT: '40o2' });
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/invalid configuration:\n\s+CORE_PORT: /);
    expect(run.output).not.toContain('emulator started');
  }, 60_000);

  it('should report a CORE_PORT in use at once, naming it, before any emulator', async () => {
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const run = await failedStart({ CORE_PORT: String(port) });
      expect(run.code).toBe(1);
      expect(run.output).toContain(`CORE_PORT: port ${port} on 127.0.0.1 is already in use`);
      expect(run.output).not.toContain('emulator started');
    } finally {
      taken.close();
    }
  }, 60_000);

  it('should report an emulator port in use at once, naming its variable, before any emulator', async () => {
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const run = await failedStart({ FIRESTORE_EMULATOR_PORT: String(port) });
      expect(run.code).toBe(1);
      expect(run.output).toContain(`FIRESTORE_EMULATOR_PORT: port ${port} on 127.0.0.1 is already in use`);
      expect(run.output).not.toContain('emulator started');
    } finally {
      taken.close();
    }
  }, 60_000);
});
