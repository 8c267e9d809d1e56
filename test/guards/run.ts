// `npm run test:guards`: every lock, FOR UPDATE, advisory lock, unique constraint and idempotency
// claim that correctness relies on carries a marker naming the test that proves it:
//
//   // guard: <name> | remove: <text> | test: <test file> :: <test name (a part of it)>
//   -- guard: …   (the same in schema.sql)
//
// The script checks that each named test passes as the code is, then, one guard at a time,
// removes <text> from the first code line after the marker that holds it, runs the named test on
// native PostgreSQL and expects it to fail. It prints guard → test → fails without it, and exits
// non-zero when a removal survives (or a named test does not pass as is).
// The engine and emulators are started once and shared by every run (TEST_SHARED_PARTS), except
// for a guard in schema.sql: its removal must reach the template database, so that run starts its
// own. The checkout is never edited: each of GUARD_WORKERS workers (default 1) removes guards in a
// copy of the tracked files of its own (node_modules linked, the workspace packages pointing into
// the copy), one guard at a time, so a removal made for one guard cannot hide another's survival.
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSharedParts } from '../global-setup';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCES = ['lib', 'functions', 'run-services', 'schema'];
const MARKER = /(?:\/\/|--)\s*guard:\s*([\w.-]+)\s*\|\s*remove:\s*(.+?)\s*\|\s*test:\s*(\S+)\s*::\s*(.+?)\s*$/;

export interface Guard {
  name: string;
  file: string;
  /** The line (0-based) the removal applies to. */
  line: number;
  remove: string;
  testFile: string;
  testName: string;
}

/** Every marker under the source folders, with the code line it guards. */
export function findGuards(root = ROOT): Guard[] {
  const listed = spawnSync('git', ['ls-files', ...SOURCES], { cwd: root, encoding: 'utf8' }).stdout.split('\n');
  const guards: Guard[] = [];
  for (const file of listed.filter((f) => /\.(ts|sql)$/.test(f) && !f.includes('node_modules'))) {
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

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Runs the named tests on native PostgreSQL; true when vitest reports every one passed. Not
 * spawnSync: the shared GCS emulator runs in this process and must keep answering meanwhile.
 */
async function testsPass(files: string[], names: string[], shared: string | undefined, show = false, cwd = ROOT) {
  const child = spawn('npx', ['vitest', 'run', ...new Set(files), '-t', names.map(escapeRegExp).join('|')], {
    cwd,
    env: { ...process.env, TEST_DATABASE: 'native', ...(shared ? { TEST_SHARED_PARTS: shared } : {}) },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const ok = status === 0 && !/no tests? (found|ran)/i.test(out) && /\d+ passed/.test(out);
  if (!ok && show) console.error(out.split('\n').slice(-60).join('\n')); // why the check failed
  return ok;
}

/**
 * A copy of the repository's tracked files at `dir`/main, with ../shared beside it as in the
 * checkout. Dependencies are links into the checkout's node_modules, except the workspace
 * packages (@mi/*), whose relative links then point into the copy, so a removal there is seen.
 */
function workTree(dir: string): string {
  const tree = path.join(dir, 'main');
  const files = spawnSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  for (const f of files) cpSync(path.join(ROOT, f), path.join(tree, f));
  symlinkSync(path.resolve(ROOT, '../shared'), path.join(dir, 'shared'));
  const modules = path.join(tree, 'node_modules');
  mkdirSync(path.join(modules, '@mi'), { recursive: true });
  for (const entry of readdirSync(path.join(ROOT, 'node_modules'))) {
    if (entry !== '@mi') symlinkSync(path.join(ROOT, 'node_modules', entry), path.join(modules, entry));
  }
  for (const pkg of readdirSync(path.join(ROOT, 'node_modules/@mi'))) {
    symlinkSync(readlinkSync(path.join(ROOT, 'node_modules/@mi', pkg)), path.join(modules, '@mi', pkg));
  }
  // A workspace's own dependencies (npm put them beside it: version conflicts with the root's).
  for (const ws of ['lib', 'functions', 'run-services/live', 'emulators', 'client']) {
    const own = path.join(ROOT, ws, 'node_modules');
    try {
      readdirSync(own);
    } catch {
      continue;
    }
    symlinkSync(own, path.join(tree, ws, 'node_modules'));
  }
  return tree;
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const guards = findGuards().filter((g) => !only.length || only.includes(g.name));
  if (!guards.length) throw new Error('no guard markers found');
  process.env.TEST_DATABASE = 'native';
  const parts = await startSharedParts();
  try {
    process.exitCode = await proveAll(guards, JSON.stringify({ env: parts.env, engine: parts.engine }));
  } finally {
    await parts.stop();
  }
}

/** The exit code: 0 when every guard's removal fails its test. */
async function proveAll(guards: Guard[], shared: string): Promise<number> {
  // One at a time by default: some interleaving tests provoke their race by chance (the task tree's
  // ring of re-parentings), and two guard runs at once on 2 cores starved it (the removal survived).
  const workers = Math.max(1, Math.min(Number(process.env.GUARD_WORKERS ?? 1), guards.length));
  const base = path.join(tmpdir(), `mi-guards-${process.pid}`);
  try {
    const trees = Array.from({ length: workers }, (_, i) => workTree(path.join(base, String(i))));
    // In every copy: a copy that did not work would make every removal look proven.
    console.log(
      `${guards.length} guards; checking that their tests pass as the code is, in ${workers === 1 ? 'a copy' : `${workers} copies`}…`,
    );
    const names = guards.map((g) => g.testName);
    const files = guards.map((g) => g.testFile);
    const asIs = await Promise.all(trees.map((t) => testsPass(files, names, shared, true, t)));
    if (asIs.includes(false)) {
      console.error("the guards' tests do not all pass on the unchanged code: fix them first");
      return 1;
    }
    return await proveIn(trees, guards, shared);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** Removes each guard in turn in one of the copies and runs its test there; the exit code. */
async function proveIn(trees: string[], guards: Guard[], shared: string): Promise<number> {
  const rows: [string, string, string][] = new Array(guards.length);
  let next = 0;
  const work = async (tree: string) => {
    for (let i = next++; i < guards.length; i = next++) {
      const g = guards[i];
      const file = path.join(tree, g.file);
      const original = readFileSync(file, 'utf8');
      const lines = original.split('\n');
      lines[g.line] = lines[g.line].replace(g.remove, '');
      writeFileSync(file, lines.join('\n'));
      let failed: boolean;
      try {
        const ownParts = g.file.endsWith('.sql') ? undefined : shared;
        failed = !(await testsPass([g.testFile], [g.testName], ownParts, false, tree));
      } finally {
        writeFileSync(file, original);
      }
      rows[i] = [
        `${g.name} (${g.file}:${g.line + 1})`,
        `${g.testFile} :: ${g.testName}`,
        failed ? 'yes' : 'NO: the removal survives',
      ];
      console.log(`${g.name}: ${failed ? 'the test fails without it' : 'SURVIVES'}`);
    }
  };
  await Promise.all(trees.map(work));
  const widths = [0, 1, 2].map((i) =>
    Math.max(...rows.map((r) => r[i].length), ['guard', 'test', 'fails without it'][i].length),
  );
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(
    ['', line(['guard', 'test', 'fails without it']), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join(
      '\n',
    ),
  );
  const survived = rows.filter((r) => r[2] !== 'yes').length;
  if (survived) console.error(`${survived} guard(s) survive their removal: their tests do not prove them`);
  return survived ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
