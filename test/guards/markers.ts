// Guard markers and the lock sites they must cover (the format: the header of ./run.ts).
//
// A lock site is a code line that takes a row or advisory lock: FOR UPDATE / FOR NO KEY UPDATE /
// FOR SHARE / FOR KEY SHARE, pg_advisory…, LOCK TABLE, a `{ forUpdate: true }` read, or a call of
// lockSpeakerIdentity. Each one is either guarded (a marker whose removal text is on that line) or
// carries a `no guard: <why>` comment in the 8 lines above it (no other lock site between). A repository's optional lock
// (`opts.forUpdate ? ' FOR UPDATE' : ''`) is a mechanism, not a site: its callers are the sites.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCES = ['lib', 'functions', 'run-services', 'schema'];
const MARKER = /(?:\/\/|--)\s*guard:\s*([\w.-]+)\s*\|\s*remove:\s*(.+?)\s*\|\s*test:\s*(\S+)\s*::\s*(.+?)\s*$/;
const LOCK =
  /\bFOR (?:NO KEY )?UPDATE\b|\bFOR (?:KEY )?SHARE\b|pg_advisory|\bLOCK TABLE\b|forUpdate: true|(?<!function )lockSpeakerIdentity\(/i;
const OPTIONAL_LOCK = /opts\.forUpdate \?/;
const COMMENT = /^\s*(?:\/\/|\*|\/\*|--)/;
const NO_GUARD = /no guard:/i;

export interface Guard {
  name: string;
  file: string;
  /** The line (0-based) the removal applies to. */
  line: number;
  remove: string;
  testFile: string;
  testName: string;
}

export interface LockSite {
  file: string;
  /** 0-based. */
  line: number;
  text: string;
  /** The guard whose removal is on this line, or the `no guard` note above it. */
  covered: string | null;
}

function sourceFiles(root: string): string[] {
  const listed = spawnSync('git', ['ls-files', ...SOURCES], { cwd: root, encoding: 'utf8' }).stdout.split('\n');
  return listed.filter((f) => /\.(ts|sql)$/.test(f) && !f.includes('node_modules') && !f.endsWith('.test.ts'));
}

/** Every marker under the source folders, with the code line it guards. */
export function findGuards(root = ROOT): Guard[] {
  const guards: Guard[] = [];
  for (const file of sourceFiles(root)) {
    const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
    lines.forEach((text, i) => {
      const m = MARKER.exec(text);
      if (!m) return;
      const [, name, remove, testFile, testName] = m;
      const line = lines.findIndex((l, j) => j > i && !MARKER.test(l) && l.includes(remove));
      if (line < 0 || line > i + 8)
        throw new Error(`${file}:${i + 1}: guard ${name}: "${remove}" is not in the lines after the marker`);
      guards.push({ name, file, line, remove, testFile, testName });
    });
  }
  const names = guards.map((g) => g.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) throw new Error(`guard names must be unique: ${twice.join(', ')}`);
  return guards;
}

const isLockSite = (text: string) => !COMMENT.test(text) && LOCK.test(text) && !OPTIONAL_LOCK.test(text);

/** A `no guard: <why>` comment in the 8 lines above line `i`, with no other lock site between. */
function noGuardNote(lines: string[], i: number): boolean {
  for (let j = i - 1; j >= Math.max(0, i - 8) && !isLockSite(lines[j]); j--) {
    if (COMMENT.test(lines[j]) && NO_GUARD.test(lines[j])) return true;
  }
  return false;
}

/** Every lock site under the source folders, and what covers it. */
export function findLockSites(root = ROOT): LockSite[] {
  const guards = findGuards(root);
  const sites: LockSite[] = [];
  for (const file of sourceFiles(root)) {
    const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
    lines.forEach((text, line) => {
      if (!isLockSite(text)) return;
      const guard = guards.find((g) => g.file === file && g.line === line);
      const note = noGuardNote(lines, line);
      sites.push({ file, line, text: text.trim(), covered: guard?.name ?? (note ? 'no guard' : null) });
    });
  }
  return sites;
}
