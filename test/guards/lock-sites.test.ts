// Every lock the code takes is proven by a guard (test:guards removes it and expects its test to
// fail) or says why it needs none: an unmarked lock site fails the build here, in seconds.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findLockSites } from './markers';

describe('lock sites', () => {
  it('should each be guarded by a marker or carry a no-guard note', () => {
    const sites = findLockSites();
    // The scan sees the locks it must (a sanity floor: the house takes dozens).
    expect(sites.length).toBeGreaterThan(40);
    const unmarked = sites.filter((s) => !s.covered).map((s) => `${s.file}:${s.line + 1}: ${s.text}`);
    expect(unmarked, 'add a `// guard: …` marker with its test, or a `// no guard: <why>` note').toEqual([]);
  });

  it('should report a lock that has neither, and accept each form of cover', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'lock-sites-'));
    try {
      mkdirSync(path.join(root, 'lib'));
      const code = [
        "await q.query('a', 'SELECT 1 FROM t WHERE id = $1 FOR UPDATE', [id]);",
        '// guard: t-lock | remove: FOR SHARE | test: test/x.test.ts :: holds t',
        "await q.query('b', 'SELECT 1 FROM t WHERE id = $1 FOR SHARE', [id]);",
        '// No guard: only spares a second sweep the wait.',
        "await q.query('c', 'SELECT 1 FROM t FOR UPDATE SKIP LOCKED', []);",
        "const sql = `SELECT ${cols} FROM t${opts.forUpdate ? ' FOR UPDATE' : ''}`;",
        '// no guard: covers the next lock site only',
        "await q.query('d', 'SELECT pg_advisory_xact_lock(1)', []);",
        'await getT(q, id, { forUpdate: true });',
      ];
      writeFileSync(path.join(root, 'lib/x.ts'), `${code.join('\n')}\n`);
      execFileSync('git', ['init', '-q'], { cwd: root });
      execFileSync('git', ['add', '.'], { cwd: root });
      const sites = findLockSites(root).map((s) => [s.line + 1, s.covered]);
      expect(sites).toEqual([
        [1, null],
        [3, 't-lock'],
        [5, 'no guard'],
        [8, 'no guard'],
        [9, null],
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
