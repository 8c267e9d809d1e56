// `npm run test:guards`: every lock, FOR UPDATE, advisory lock, unique constraint and idempotency
// claim that correctness relies on carries a marker naming the test that proves it (a lock that
// needs none says `no guard: <why>`; ./lock-sites.test.ts fails the build on a lock with neither):
//
//   // guard: <name> | remove: <text> | test: <test file> :: <test name (a part of it)>
//   -- guard: …   (the same in schema.sql)
//
// The script checks that each name selects a test that passes as the code is, then, one guard at
// a time, removes <text> from the first code line after the marker that holds it, runs the named
// test on native PostgreSQL and expects it to fail (read from vitest's JSON report: a run that
// selects no test proves nothing). It prints guard → test → fails without it, and exits non-zero
// when a removal survives (or a name selects no passing test as is).
// The engine and emulators are started once and shared by every run (TEST_SHARED_PARTS), except
// for a guard in schema.sql: its removal must reach the template database, so that run starts its
// own. The checkout is never edited: each of GUARD_WORKERS workers (default 1) removes guards in a
// copy of the tracked files of its own (node_modules linked, the workspace packages pointing into
// the copy), one guard at a time, so a removal made for one guard cannot hide another's survival.
// Before that, each guard test file runs once as the code is, the files dealt out over the copies.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
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
import { findGuards, type Guard } from './markers';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What one vitest run reported: the full names (describe titles and test name) by outcome. */
interface TestRun {
  passed: string[];
  failed: string[];
  /** vitest's own output, for a run that went wrong. */
  out: string;
}

/**
 * Runs the named tests on native PostgreSQL and reads vitest's JSON report. Not spawnSync: the
 * shared GCS emulator runs in this process and must keep answering meanwhile.
 */
async function runTests(files: string[], names: string[], shared: string | undefined, cwd = ROOT): Promise<TestRun> {
  const report = path.join(cwd, `.guard-report-${randomUUID()}.json`);
  // The checkout's own binary (npx would resolve it again on every one of the runs).
  const child = spawn(
    path.join(ROOT, 'node_modules/.bin/vitest'),
    [
      'run',
      ...new Set(files),
      '-t',
      names.map(escapeRegExp).join('|'),
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
    ],
    { cwd, env: { ...process.env, TEST_DATABASE: 'native', ...(shared ? { TEST_SHARED_PARTS: shared } : {}) } },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('close', resolve));
  const run: TestRun = { passed: [], failed: [], out };
  try {
    const json = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: { assertionResults: { fullName: string; status: string }[] }[];
    };
    for (const t of json.testResults.flatMap((f) => f.assertionResults)) {
      if (t.status === 'passed') run.passed.push(t.fullName);
      if (t.status === 'failed') run.failed.push(t.fullName);
    }
  } catch {
    // No report (vitest did not get to run the tests): nothing passed, nothing failed.
  } finally {
    rmSync(report, { force: true });
  }
  return run;
}

/** The tests a guard names: those whose full name holds its test name (as `-t` selects them). */
const named = (g: Guard, fullNames: string[]) => fullNames.filter((n) => n.includes(g.testName));

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
  // One copy by default; CI runs two (.ci/run), and proveIn tries a survivor of those again alone.
  const files = new Set(guards.map((g) => g.testFile)).size;
  const workers = Math.max(1, Math.min(Number(process.env.GUARD_WORKERS ?? 1), files));
  const base = path.join(tmpdir(), `mi-guards-${process.pid}`);
  try {
    const trees = Array.from({ length: workers }, (_, i) => workTree(path.join(base, String(i))));
    // Each test file once, the files dealt out over the copies: every copy runs some (a copy that
    // did not work would make every removal look proven), every guard's test is seen passing.
    console.log(
      `${guards.length} guards; checking that their tests pass as the code is, in ${workers === 1 ? 'a copy' : `${workers} copies`}…`,
    );
    const testFiles = [...new Set(guards.map((g) => g.testFile))];
    const copyOf = (g: Guard) => testFiles.indexOf(g.testFile) % trees.length;
    const asIs = await Promise.all(
      trees.map((t, i) => {
        const mine = guards.filter((g) => copyOf(g) === i);
        return runTests(
          mine.map((g) => g.testFile),
          mine.map((g) => g.testName),
          shared,
          t,
        );
      }),
    );
    // Every test run passes, and each guard names at least one of them: a name that selects no
    // test would make its removal look proven.
    const unnamed = guards.filter((g) => named(g, asIs[copyOf(g)].passed).length === 0);
    const broken = asIs.find((r) => r.failed.length > 0 || r.passed.length === 0);
    if (broken || unnamed.length) {
      if (broken) console.error(broken.out.split('\n').slice(-60).join('\n'));
      for (const g of unnamed) console.error(`${g.name}: "${g.testName}" names no test of ${g.testFile} that passes`);
      console.error("the guards' tests do not all pass on the unchanged code: fix them first");
      return 1;
    }
    return await proveIn(trees, guards, shared);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** Removes the guard in the copy and runs its test there: true when the test fails (the guard is proven). */
async function proven(g: Guard, tree: string, shared: string): Promise<boolean> {
  const file = path.join(tree, g.file);
  const original = readFileSync(file, 'utf8');
  const lines = original.split('\n');
  lines[g.line] = lines[g.line].replace(g.remove, '');
  writeFileSync(file, lines.join('\n'));
  try {
    const ownParts = g.file.endsWith('.sql') ? undefined : shared;
    // Proven only by a named test that ran and failed (not by a run that failed to start).
    return named(g, (await runTests([g.testFile], [g.testName], ownParts, tree)).failed).length > 0;
  } finally {
    writeFileSync(file, original);
  }
}

/** Removes each guard in turn in one of the copies and runs its test there; the exit code. */
async function proveIn(trees: string[], guards: Guard[], shared: string): Promise<number> {
  const rows: [string, string, string][] = new Array(guards.length);
  const row = (i: number, outcome: string) => {
    const g = guards[i];
    rows[i] = [`${g.name} (${g.file}:${g.line + 1})`, `${g.testFile} :: ${g.testName}`, outcome];
  };
  let next = 0;
  const work = async (tree: string) => {
    for (let i = next++; i < guards.length; i = next++) {
      const failed = await proven(guards[i], tree, shared);
      row(i, failed ? 'yes' : 'NO: the removal survives');
      console.log(`${guards[i].name}: ${failed ? 'the test fails without it' : 'SURVIVES'}`);
    }
  };
  await Promise.all(trees.map(work));
  // With two copies at once, a test that needs the machine to itself to interleave may pass
  // without its guard: each survivor is tried again alone before it counts. A guard that
  // proves nothing survives this too.
  if (trees.length > 1) {
    for (const [i, r] of rows.entries()) {
      if (r[2] === 'yes') continue;
      const failed = await proven(guards[i], trees[0], shared);
      row(i, failed ? 'yes (run alone)' : 'NO: the removal survives, alone too');
      console.log(`${guards[i].name}, alone: ${failed ? 'the test fails without it' : 'SURVIVES'}`);
    }
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
  const survived = rows.filter((r) => !r[2].startsWith('yes')).length;
  if (survived) console.error(`${survived} guard(s) survive their removal: their tests do not prove them`);
  return survived ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
