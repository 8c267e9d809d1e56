// A private, throwaway native PostgreSQL cluster for tests, benchmarks and fault runs: initdb in
// a temp dir, loopback only, fsync off. No root needed; when running as root (CI), the server
// runs as the `postgres` user that Debian's package creates, since postgres refuses root.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './free-port';

export interface NativeEngine {
  bindir: string;
  /** e.g. "15.18" */
  version: string;
  /** pgvector's default_version, e.g. "0.8.0" */
  vector: string;
  label: string;
}

/** The native PostgreSQL with pgvector on this machine, or null (reason in `why`). */
export function findNativeEngine(): { engine: NativeEngine | null; why: string } {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((d) => /^\d+$/.test(d))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bindir = path.join(root, major, 'bin');
    if (!existsSync(path.join(bindir, 'initdb')) || !existsSync(path.join(bindir, 'postgres'))) continue;
    const control = `/usr/share/postgresql/${major}/extension/vector.control`;
    if (!existsSync(control))
      return { engine: null, why: `PostgreSQL ${major} has no pgvector (run npm run db:install-native)` };
    const vector = /default_version\s*=\s*'([^']+)'/.exec(readFileSync(control, 'utf8'))?.[1] ?? '?';
    const version =
      /(\d+\.\d+)/.exec(execFileSync(path.join(bindir, 'postgres'), ['--version'], { encoding: 'utf8' }))?.[1] ?? major;
    return {
      engine: { bindir, version, vector, label: `PostgreSQL ${version} + pgvector ${vector} (native)` },
      why: '',
    };
  }
  return { engine: null, why: 'no PostgreSQL server binaries in /usr/lib/postgresql (run npm run db:install-native)' };
}

export interface NativeCluster {
  engine: NativeEngine;
  port: number;
  dataDir: string;
  /** A superuser URL for database `name` (default `postgres`). */
  url(name?: string): string;
  /** pg_ctl restart (fault runs): connections drop, the server is back when this resolves. */
  restart(opts?: { downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Extra server settings (`-c name=value`). */
  settings?: Record<string, string | number>;
  port?: number;
}

const SUPERUSER = 'postgres';

export async function startNativeCluster(engine: NativeEngine, opts: ClusterOptions = {}): Promise<NativeCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'mi-pg-'));
  const dataDir = path.join(dir, 'data');
  const asUser = runAs();
  if (asUser) {
    chownSync(dir, asUser.uid, asUser.gid);
    chmodSync(dir, 0o700);
  }
  const run = (bin: string, args: string[]) =>
    execFileSync(path.join(engine.bindir, bin), args, { stdio: 'pipe', cwd: dir, ...(asUser ?? {}) });
  run('initdb', ['-D', dataDir, '-U', SUPERUSER, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = opts.port ?? (await freePort());
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    port,
    unix_socket_directories: dir,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    max_connections: 300,
    shared_buffers: '256MB',
    ...opts.settings,
  };
  const options = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');
  const logFile = path.join(dir, 'server.log');
  const ctlArgs = (action: string, extra: string[]) => [
    action,
    '-D',
    dataDir,
    '-l',
    logFile,
    '-w',
    '-t',
    '60',
    '-o',
    options,
    ...extra,
  ];
  // Asynchronous, so a restart does not stall the event loop of the process that serves from it.
  const ctl = (action: string, extra: string[] = []) =>
    promisify(execFile)(path.join(engine.bindir, 'pg_ctl'), ctlArgs(action, extra), { cwd: dir, ...(asUser ?? {}) });
  try {
    await ctl('start');
  } catch (err) {
    const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    throw new Error(`native PostgreSQL did not start: ${(err as Error).message}\n${log}`);
  }
  const url = (name = 'postgres') => `postgres://${SUPERUSER}@127.0.0.1:${port}/${name}`;
  return {
    engine,
    port,
    dataDir,
    url,
    async restart({ downMs = 0 } = {}) {
      await ctl('stop', ['-m', 'fast']);
      if (downMs) await new Promise((r) => setTimeout(r, downMs));
      await ctl('start');
    },
    async stop() {
      await ctl('stop', ['-m', 'immediate']).catch(() => undefined); // already stopped
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Postgres refuses to run as root: run its binaries as the `postgres` user then. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line)
    throw new Error('running as root and no `postgres` user to run the server as (run npm run db:install-native)');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Runs statements on one short-lived superuser connection. */
export async function adminQuery(url: string, ...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const s of statements) await client.query(s);
  } finally {
    await client.end();
  }
}
