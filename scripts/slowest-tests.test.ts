// scripts/slowest-tests.ts on a vitest JSON report: the slowest files first, at most the count asked.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(path.join(tmpdir(), 'slowest-tests-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('slowest-tests', () => {
  it('should print the slowest test files first, as many as asked, naming a failed one', () => {
    const report = path.join(dir, 'report.json');
    const file = (name: string, seconds: number, status = 'passed') => ({
      name: path.join(process.cwd(), name),
      startTime: 1_000,
      endTime: 1_000 + seconds * 1000,
      status,
    });
    writeFileSync(
      report,
      JSON.stringify({
        testResults: [file('test/a.test.ts', 2), file('test/b.test.ts', 40.25, 'failed'), file('test/c.test.ts', 7)],
      }),
    );
    const out = execFileSync('npx', ['tsx', 'scripts/slowest-tests.ts', report, '2'], { encoding: 'utf8' });
    expect(out.trim().split('\n')).toEqual([
      'The 2 slowest of 3 test files:',
      '   40.3 s  test/b.test.ts (failed)',
      '    7.0 s  test/c.test.ts',
    ]);
  });
});
