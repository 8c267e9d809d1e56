import { readFileSync } from 'node:fs';
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
});
