// The Cloud Run entry (run-services/live/server.ts) as a real child process on a test's database
// and emulators, started on a free port; resolves once every worker listens (its ready line),
// however long a loaded machine takes: no time budget of its own, the test's timeout bounds it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  process: ChildProcess;
  wsUrl: string;
  url: string;
  /** Each live instance's id and pid, from its 'live service listening' line. */
  instances: { instance: string; pid: number }[];
  /** The `n`th live instance (from 1), once it listens: a replaced worker is awaited by readiness too. */
  listening(n: number): Promise<{ instance: string; pid: number }>;
  exited: Promise<number | null>;
  /** Every JSON log line so far. */
  logs: Record<string, any>[];
}

/** `workers`: LIVE_WORKERS, also how many listening lines to wait for. */
export async function startServer(
  env: Record<string, string>,
  workers: number,
  children: ChildProcess[],
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'run-services/live/server.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ML_SERVICE_URL: 'http://127.0.0.1:9',
      ...env,
      PORT: '0',
      LOG_LEVEL: 'info',
      LIVE_WORKERS: String(workers),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const logs: Record<string, any>[] = [];
  const instances: { instance: string; pid: number }[] = [];
  const waiting: { n: number; resolve(i: { instance: string; pid: number }): void }[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: Record<string, any>;
      try {
        entry = JSON.parse(line);
      } catch {
        return; // not a log line
      }
      logs.push(entry);
      if (entry.message !== 'live service listening') return;
      instances.push({ instance: entry.instance, pid: entry.pid });
      for (const w of waiting.filter((w) => w.n === instances.length)) w.resolve(instances[w.n - 1]);
      if (instances.length === workers) resolve(entry.port);
    });
    void exited.then((code) => reject(new Error(`server.ts exited with ${code}: ${stderr}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const listening = (n: number) =>
    instances.length >= n
      ? Promise.resolve(instances[n - 1])
      : new Promise<{ instance: string; pid: number }>((resolve, reject) => {
          waiting.push({ n, resolve });
          void exited.then((code) => reject(new Error(`server.ts exited with ${code} before instance ${n} listened`)));
        });
  return { process: child, url, wsUrl: `ws://127.0.0.1:${port}/ws`, instances, listening, exited, logs };
}

/** true while a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
