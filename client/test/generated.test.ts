// The checked-in generated files must be what the current OpenAPI document generates: a route
// change without `npm run client:generate` fails here (and so in CI).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../scripts/generated-files';

describe('generated client files', () => {
  it('match the current OpenAPI document (run `npm run client:generate` after a route change)', async () => {
    const files = await generatedFiles();
    expect(Object.keys(files).length).toBeGreaterThan(1);
    for (const [file, expected] of Object.entries(files)) {
      const checkedIn = await readFile(file, 'utf8').catch(() => '(missing)');
      expect(checkedIn, `${path.basename(file)} is stale: run npm run client:generate`).toBe(expected);
    }
  });

  it('types cover the document (an operation of it is in the generated paths)', async () => {
    const schema = await readFile(path.join(import.meta.dirname, '../src/schema.d.ts'), 'utf8');
    expect(schema).toContain('"/meetings/{id}/recording/audio/{range}"');
  });
});
