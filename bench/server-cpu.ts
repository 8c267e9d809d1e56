// CPU time of the database server, for benchmarks on a shared machine: the other sessions'
// work inflates wall time (scheduling delay) far more than the CPU time a query costs.
import { readFileSync } from 'node:fs';
import type { Queryable } from '@mi/lib/db/pool';
import type { TestEngine } from '../test/support/database';

/**
 * A clock (ms) of the CPU time the database server's processes have spent on a CPU
 * (/proc/<pid>/schedstat of the postmaster's children: backends, parallel workers, background
 * processes). Native engine on Linux only; null elsewhere (PGlite runs in this process).
 */
export async function serverCpuClock(engine: TestEngine, db: Queryable): Promise<(() => number) | null> {
  const postmaster = await postmasterPid(engine, db);
  if (postmaster === null) return null;
  const cpuNs = (pid: string) => {
    try {
      return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      return 0; // a process that just ended
    }
  };
  const clock = () =>
    readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8')
      .trim()
      .split(' ')
      .reduce((sum, pid) => sum + cpuNs(pid), 0) / 1e6;
  clock();
  return clock;
}

/** The native engine's postmaster (the parent of every server process); null on PGlite or off Linux. */
export async function postmasterPid(engine: TestEngine, db: Queryable): Promise<number | null> {
  if (engine.kind !== 'native') return null;
  try {
    const { rows } = await db.query<{ pid: number }>('bench.pid', 'SELECT pg_backend_pid() AS pid');
    return Number(readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
  } catch {
    return null;
  }
}

/** One measurement: wall time and the server's CPU time meanwhile (NaN without a clock), in ms. */
export interface Sample {
  wall: number;
  cpu: number;
}

/** Runs fn once, measuring wall time and the server CPU time it cost. */
export const timedWith =
  (cpuClock: (() => number) | null) =>
  async <T>(fn: () => Promise<T>): Promise<[T, Sample]> => {
    const c = cpuClock?.() ?? NaN;
    const t = performance.now();
    const out = await fn();
    const wall = performance.now() - t;
    return [out, { wall, cpu: (cpuClock?.() ?? NaN) - c }];
  };
