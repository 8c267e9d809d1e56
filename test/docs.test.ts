import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../lib/config';
import { EVENTS_DOC, withEventTable } from '../scripts/docs-events';

describe('docs', () => {
  it('should document every configuration variable the code reads', () => {
    const names = Object.keys(configSchema.shape);
    expect(names.length).toBeGreaterThan(60);
    const doc = readFileSync('docs/configuration.md', 'utf8');
    const missing = names.filter((n) => !doc.includes(`| ${n} |`));
    expect(missing).toEqual([]);
  });

  it('should show the event catalogue in docs/websocket.md (npm run docs:events writes it)', () => {
    const doc = readFileSync(EVENTS_DOC, 'utf8');
    expect(doc).toBe(withEventTable(doc));
  });

  it('should link only to files that exist, from every Markdown file of the project', () => {
    const files = execFileSync('git', ['ls-files', '*.md'], { encoding: 'utf8' }).trim().split('\n');
    expect(files).toContain('README.md');
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue; // web links, anchors of the same page
        const resolved = path.join(path.dirname(file), target.split('#')[0]);
        // ../shared is the contract beside the checkout (CI clones it there); the rest is ours.
        if (!resolved.startsWith('../') && !existsSync(resolved)) broken.push(`${file} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
