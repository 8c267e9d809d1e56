// writeSection replaces only its own section of BENCHMARKS.md: hand-written text a merge left
// below it (or a hand-written section after it) is kept where it is, and the file as committed
// has no stray text after a generated section's end.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SECTION_END, writeSection } from './report';

const dir = mkdtempSync(path.join(tmpdir(), 'bench-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sections = (text: string) => text.split(/\n(?=## )/);

describe('writeSection', () => {
  it('should rewrite its section and keep text below its end and the sections around it', () => {
    const file = path.join(dir, 'a.md');
    writeSection('Search', 'first run', file);
    writeSection('Live (2 workers)', 'two workers', file);
    const handWritten =
      '\nA stray hand-written paragraph.\n\n## Search: reading the figures (written by hand)\n\nKept.\n';
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(`two workers\n\n${SECTION_END}\n`, (m) => m + handWritten),
    );
    writeSection('Search', 'second run', file);
    writeSection('Live (2 workers)', 'two workers again', file);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('first run');
    expect(text).toContain('second run');
    expect(text.match(/## Live \(2 workers\)/g)).toHaveLength(1); // the title's brackets are literal
    expect(text).toContain(`two workers again\n\n${SECTION_END}\n\nA stray hand-written paragraph.`);
    expect(text).toContain('## Search: reading the figures (written by hand)\n\nKept.');
  });

  it('should replace a section written before the end line up to the next heading', () => {
    const file = path.join(dir, 'b.md');
    writeFileSync(file, '# Benchmarks\n\n## Search\n\nold table\n\n## Webhooks\n\nkept\n');
    writeSection('Search', 'new table', file);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('old table');
    expect(text).toContain(`new table\n\n${SECTION_END}\n\n## Webhooks\n\nkept\n`);
  });
});

describe('BENCHMARKS.md', () => {
  it('should have nothing between a generated section end and the next heading', () => {
    for (const section of sections(readFileSync('BENCHMARKS.md', 'utf8'))) {
      const after = section.split(SECTION_END)[1];
      expect(after?.trim() ?? '', section.split('\n')[0]).toBe('');
    }
  });

  it('should keep the search figures explained in their own hand-written section, and why in a decision record', () => {
    const reading = sections(readFileSync('BENCHMARKS.md', 'utf8')).find((s) =>
      s.startsWith('## Search: reading the figures'),
    );
    expect(reading).toContain('`recent`');
    expect(reading).toContain('`relevance` for the commonest words');
    const record = /\]\((docs\/decisions\/[^)]+\.md)\)/.exec(reading ?? '')?.[1];
    expect(record).toBe('docs/decisions/0006-search-ranking.md');
    const decision = readFileSync(record!, 'utf8');
    expect(decision).toContain('**Every match ranked, no cap.**');
    expect(decision).toContain('`recent` ranks only the page');
  });

  it('should link only to decision records that exist', () => {
    const text = readFileSync('BENCHMARKS.md', 'utf8');
    const records = [...text.matchAll(/\]\((docs\/decisions\/[^)]+\.md)\)/g)].map((m) => m[1]);
    expect(records.length).toBeGreaterThan(5);
    for (const record of records) expect(existsSync(record), record).toBe(true);
  });
});
