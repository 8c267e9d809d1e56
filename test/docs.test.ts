import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('docs', () => {
  it('should document every configuration variable the code reads', () => {
    const source = readFileSync('lib/config.ts', 'utf8');
    const schemaBlock = source.slice(source.indexOf('const schema = z.object({'), source.indexOf('});', source.indexOf('const schema = z.object({')));
    const names = [...schemaBlock.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(60);
    const doc = readFileSync('docs/configuration.md', 'utf8');
    const missing = names.filter((n) => !doc.includes(`| ${n} |`));
    expect(missing).toEqual([]);
  });
});
