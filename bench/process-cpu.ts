// CPU time of processes from /proc (Linux), for benchmarks on a shared machine: what a process
// spent on a CPU does not grow when other work delays it, where wall time does.
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

interface Proc {
  pid: number;
  comm: string;
  /** utime + stime of every thread, ms. */
  cpuMs: number;
}

function readProc(pid: number): Proc | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    // fields[0] is state (field 3): utime and stime are fields 14 and 15.
    return {
      pid,
      comm: stat.slice(stat.indexOf('(') + 1, close),
      cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
    };
  } catch {
    return null; // ended meanwhile
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(' '))
        if (c) out.push(Number(c));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** The process and all its live descendants. */
export function processTree(root: number): Proc[] {
  const out: Proc[] = [];
  const walk = (pid: number) => {
    const p = readProc(pid);
    if (!p) return;
    out.push(p);
    for (const c of childrenOf(pid)) walk(c);
  };
  walk(root);
  return out;
}

/** CPU ms of a process tree (its live members). */
export function treeCpuMs(root: number): number {
  return processTree(root).reduce((n, p) => n + p.cpuMs, 0);
}

/**
 * CPU ms by group for every descendant of `root` (this process by default): a process belongs
 * to the first named root it descends from, else to a group named by its command.
 */
export function cpuByGroup(named: Record<string, number | undefined>, root = process.pid): Map<string, number> {
  const owner = new Map<number, string>();
  for (const [name, pid] of Object.entries(named)) if (pid) for (const p of processTree(pid)) owner.set(p.pid, name);
  const groups = new Map<string, number>();
  // A named root may live outside this tree (a daemonized postmaster): its processes count too.
  const seen = new Set<number>();
  const all = [...processTree(root), ...Object.values(named).flatMap((pid) => (pid ? processTree(pid) : []))].filter(
    (p) => !seen.has(p.pid) && seen.add(p.pid),
  );
  for (const p of all) {
    const group = owner.get(p.pid) ?? (p.pid === root ? 'bench orchestrator' : commGroup(p.comm));
    groups.set(group, (groups.get(group) ?? 0) + p.cpuMs);
  }
  return groups;
}

function commGroup(comm: string): string {
  if (comm === 'postgres') return 'PostgreSQL';
  if (comm === 'java' || comm.startsWith('python') || comm === 'cloud_firestore')
    return 'Pub/Sub + Firestore emulators';
  return comm;
}

/** Resident memory of a process tree (its live members), bytes. */
export function treeRssBytes(root: number): number {
  let bytes = 0;
  for (const p of processTree(root)) {
    try {
      bytes += Number(readFileSync(`/proc/${p.pid}/statm`, 'utf8').split(' ')[1]) * 4096;
    } catch {
      // ended meanwhile
    }
  }
  return bytes;
}

/** Busy ms of every core so far (/proc/stat: all but idle and iowait), the kernel's own work included. */
export function coreBusyMs(): number[] {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l))
    .map((l) => {
      const [user, nice, system, , , irq, softirq, steal] = l.split(/\s+/).slice(1).map(Number);
      return (user + nice + system + irq + softirq + steal) * TICK_MS;
    });
}
