// `npm start` is npm -> sh -> tsx -> node (this process). A signal to npm, sh or tsx does not
// reach this process (npm signals sh, which exits without passing it on; SIGHUP is not relayed
// at all), and the launchers exit, leaving the stack running. So this process watches its
// launchers and stops the stack once any of them is gone.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const POLL_MS = 500;

/** Calls onGone (once) when a launcher of this process has exited. Returns a cancel function. */
export function watchLaunchers(onGone: (why: string) => void): () => void {
  const launchers = launcherPids();
  const startPpid = process.ppid;
  const timer = setInterval(() => {
    const gone = process.ppid !== startPpid ? startPpid : launchers.find((pid) => !running(pid));
    if (gone === undefined) return;
    clearInterval(timer);
    onGone(`its launcher (pid ${gone}) exited`);
  }, POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The parent, and above it every sh/tsx/npm process up to and including npm (or npx). Without
 * /proc (not Linux), the parent only.
 */
export function launcherPids(): number[] {
  const pids = [process.ppid];
  let pid = process.ppid;
  for (let depth = 0; depth < 6; depth++) {
    const argv = commandLine(pid);
    if (!argv || isNpm(argv)) break;
    if (!isLauncher(argv)) {
      if (depth === 0) break; // started directly from a shell: the parent is enough
      pids.pop(); // not ours (e.g. a test runner): leave it alone
      break;
    }
    const parent = parentPid(pid);
    if (!parent || parent <= 1) break;
    pids.push(parent);
    pid = parent;
  }
  return pids;
}

function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

function parentPid(pid: number): number | undefined {
  try {
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

// npm sets its process title, so its argv[0] reads "npm start" (one string, with the space).
const isNpm = (argv: string[]) =>
  ['npm', 'npx'].includes(path.basename(argv[0].split(' ')[0])) ||
  argv.some((a) => /npm-cli\.js$|npx-cli\.js$/.test(a));
const isLauncher = (argv: string[]) =>
  (['sh', 'bash', 'dash'].includes(path.basename(argv[0])) && argv[1] === '-c') ||
  argv.some((a) => /(^|\/)tsx(\/dist\/cli\.m?js)?$/.test(a));

/** Alive and not a zombie (an exited child its parent has not reaped yet). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}
