// The setup the REST concurrency tests share: the production engine only (PGlite runs one
// transaction at a time, so nothing can interleave), one API harness per file.
import { afterAll, beforeAll, inject } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

export const native = inject('database').kind === 'native';
if (!native) console.log('test/concurrency skipped: PGlite runs one transaction at a time, so nothing can interleave');

/** Starts the file's API (native only) before its tests and hands it to `ready`; closes it after them. */
export function withNativeApi(
  ready: (api: ApiHarness) => Promise<void> | void,
  env: Record<string, string> = {},
): void {
  let started: ApiHarness | undefined;
  beforeAll(async () => {
    if (!native) return;
    started = await startApi(env);
    await ready(started);
  });
  afterAll(() => started?.close());
}
