// `npm run test:guards`: every lock, FOR UPDATE, advisory lock, unique constraint and idempotency
// claim that correctness relies on carries a marker naming the test that proves it:
//
//   // guard: <name> | remove: <text> | test: <test file> :: <test name (a part of it)>
//   -- guard: …   (the same in schema.sql)
//
// The script checks that each named test passes as the code is, then, one guard at a time,
// removes <text> from the first code line after the marker that holds it, runs the named test on
// native PostgreSQL and expects it to fail. It prints guard → test → fails without it, restores
// every file, and exits non-zero when a removal survives (or a named test does not pass as is).
// The engine and emulators are started once and shared by every run (TEST_SHARED_PARTS), except
// for a guard in schema.sql: its removal must reach the template database, so that run starts its
// own. Runs are one at a time: they share the source tree, and a removal made for one guard could
// make another guard's test fail and hide a survival.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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
async function testsPass(files: string[], names: string[], shared: string | undefined, show = false) {
  const child = spawn('npx', ['vitest', 'run', ...new Set(files), '-t', names.map(escapeRegExp).join('|')], {
    cwd: ROOT,
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
  console.log(`${guards.length} guards; checking that their tests pass as the code is…`);
  const files = guards.map((g) => g.testFile);
  if (
    !(await testsPass(
      files,
      guards.map((g) => g.testName),
      shared,
      true,
    ))
  ) {
    console.error("the guards' tests do not all pass on the unchanged code: fix them first");
    return 1;
  }
  const rows: [string, string, string][] = [];
  const originals = new Map<string, string>();
  const restore = () => {
    for (const [file, text] of originals) writeFileSync(file, text);
  };
  process.on('SIGINT', () => (restore(), process.exit(130)));
  for (const g of guards) {
    const file = path.join(ROOT, g.file);
    const original = readFileSync(file, 'utf8');
    originals.set(file, original);
    const lines = original.split('\n');
    lines[g.line] = lines[g.line].replace(g.remove, '');
    writeFileSync(file, lines.join('\n'));
    let failed: boolean;
    try {
      failed = !(await testsPass([g.testFile], [g.testName], g.file.endsWith('.sql') ? undefined : shared));
    } finally {
      writeFileSync(file, original);
      originals.delete(file);
    }
    rows.push([
      `${g.name} (${g.file}:${g.line + 1})`,
      `${g.testFile} :: ${g.testName}`,
      failed ? 'yes' : 'NO: the removal survives',
    ]);
    console.log(`${g.name}: ${failed ? 'the test fails without it' : 'SURVIVES'}`);
  }
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
