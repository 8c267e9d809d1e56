// One process per DATA_DIR: the embedded database under it is a single-writer PGlite, so a
// second writer (a second `npm start`, `db:apply` while the stack runs) would corrupt it or
// hang. The holder writes its pid to DATA_DIR/lock; a lock whose pid is gone is stale.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    readonly holder: string,
  ) {
    super(
      `DATA_DIR ${dataDir} is in use by ${holder} (pid ${pid}); stop it first, or set DATA_DIR to another directory`,
    );
    this.name = 'DataDirInUseError';
  }
}

export interface DataDirLock {
  release(): void;
}

export function lockFile(dataDir: string) {
  return path.join(dataDir, 'lock');
}

/** Takes DATA_DIR for this process, or throws DataDirInUseError naming the live holder. */
export function lockDataDir(dataDir: string, holder: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = lockFile(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, JSON.stringify({ pid: process.pid, holder }), { flag: 'wx' }); // atomic: fails when present
      return {
        release() {
          if (readHolder(file)?.pid === process.pid) rmSync(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const current = readHolder(file);
      if (current && current.pid !== process.pid && alive(current.pid))
        throw new DataDirInUseError(dataDir, current.pid, current.holder);
      rmSync(file, { force: true }); // stale: its holder died without releasing (SIGKILL)
    }
  }
  throw new Error(`could not take the lock ${file}`);
}

function readHolder(file: string): { pid: number; holder: string } | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8'));
    return Number.isInteger(parsed.pid)
      ? { pid: parsed.pid, holder: String(parsed.holder ?? 'another process') }
      : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
}
