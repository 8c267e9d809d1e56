// What a process tree holds, from the kernel's tables (/proc): its processes and the TCP ports
// they listen on. For tests that stop the local stack and look for anything left behind.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

function stat(pid: number): { ppid: number; state: string } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return undefined;
  }
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** root and every process below it (children started in their own process group included). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const s = stat(pid);
    if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

/** Exists and is not a zombie. */
export function running(pid: number): boolean {
  const s = stat(pid);
  return !!s && s.state !== 'Z';
}

/** TCP ports in LISTEN state owned by any of pids (socket inodes matched through /proc/PID/fd). */
export function listeningPorts(pids: number[]): number[] {
  const LISTEN = '0A';
  const portByInode = new Map<string, number>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(f, 'utf8').trim().split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols[3] === LISTEN) portByInode.set(cols[9], parseInt(cols[1].split(':').at(-1)!, 16));
    }
  }
  const ports = new Set<number>();
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        if (inode && portByInode.has(inode)) ports.add(portByInode.get(inode)!);
      } catch {
        // closed meanwhile
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Whether anything at all listens on port (any process, any address). */
export function listening(port: number): boolean {
  return ['/proc/net/tcp', '/proc/net/tcp6'].some((f) =>
    readFileSync(f, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .some((row) => {
        const cols = row.trim().split(/\s+/);
        return cols[3] === '0A' && parseInt(cols[1].split(':').at(-1)!, 16) === port;
      }),
  );
}
