// `npm start` as a user runs it: a child process on a clean DATA_DIR reaches /healthz, answers
// /me with a minted token, /openapi.json and /asyncapi.json; a second start keeps the data.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { mintDevToken } from '@mi/lib/adapters/auth';
import { until } from '../support/poll';
import { spawnNpmStart, untilReady } from './npm-start';

const dataDir = mkdtempSync(path.join(tmpdir(), 'mi-stack-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** The local addresses a TCP port is listening on, from the kernel's socket table. */
function listeningAddresses(port: number): string[] {
  const LISTEN = '0A';
  const rows = ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((f) => readFileSync(f, 'utf8').trim().split('\n').slice(1));
  return rows
    .map((r) => r.trim().split(/\s+/))
    .filter((cols) => cols[3] === LISTEN && parseInt(cols[1].split(':')[1], 16) === port)
    .map((cols) => {
      const hex = cols[1].split(':')[0];
      // IPv4 in little-endian hex; anything else (IPv6) reported as is.
      return hex.length === 8
        ? hex
            .match(/../g)!
            .reverse()
            .map((b) => parseInt(b, 16))
            .join('.')
        : hex;
    });
}

async function startStack(): Promise<{ url: string; stop(): Promise<void> }> {
  const stack = await spawnNpmStart({
    ...inject('emulatorEnv'),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    STORAGE_BUCKET: 'stack-test',
  });
  children.push(stack.child);
  await untilReady(stack, 90_000);
  const url = `http://127.0.0.1:${stack.port}`;
  return {
    url,
    // Ctrl-C reaches the whole process group: npm dies of the signal, the stack stops its
    // children and exits; afterwards nothing answers on the port any more.
    stop: async () => {
      process.kill(-stack.child.pid!, 'SIGINT');
      await stack.exited;
      await until(
        'the stack to stop answering after Ctrl-C',
        () =>
          fetch(`${url}/healthz`).then(
            () => false,
            () => true,
          ),
        { timeoutMs: 20_000, intervalMs: 250, context: stack.output },
      );
    },
  };
}

describe('npm start', () => {
  it('should serve the stack from a clean DATA_DIR and keep data across restarts', async () => {
    const first = await startStack();
    // Loopback only (HOST unset): the development token endpoint mints any user's token.
    expect(listeningAddresses(Number(new URL(first.url).port))).toEqual(['127.0.0.1']);
    const secrets = JSON.parse(readFileSync(path.join(dataDir, 'dev-secrets.json'), 'utf8'));
    expect(new Set([secrets.IDENTITY_SECRET_KEY, secrets.SERVICE_AUTH_TOKEN, secrets.AUDIO_URL_SIGNING_KEY]).size).toBe(
      3,
    );
    const auth = { authorization: `Bearer ${await mintDevToken(secrets.IDENTITY_SECRET_KEY, 'stacy')}` };
    expect((await fetch(`${first.url}/me`, { headers: auth })).status).toBe(200);
    expect((await (await fetch(`${first.url}/openapi.json`)).json()).openapi).toBe('3.1.0');
    const asyncapi = await (await fetch(`${first.url}/asyncapi.json`)).json();
    expect(asyncapi.asyncapi).toBe('3.0.0');
    expect(asyncapi.servers.live.host).toBe(new URL(first.url).host);
    const created = await fetch(`${first.url}/meetings`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ title: 'kept', source_type: 'text' }),
    });
    expect(created.status).toBe(201);
    const { id } = await created.json();
    await first.stop();

    const second = await startStack();
    const got = await fetch(`${second.url}/meetings/${id}`, { headers: auth });
    expect(got.status).toBe(200);
    expect((await got.json()).title).toBe('kept');
    await second.stop();
  }, 240_000);
});
