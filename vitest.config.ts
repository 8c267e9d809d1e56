import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The client package publishes built files (client/dist); in the repository its importers use
  // the source, as tsconfig.json's paths say for tsc, tsx and esbuild.
  resolve: {
    alias: [{ find: /^@mi\/client$/, replacement: fileURLToPath(new URL('./client/src/index.ts', import.meta.url)) }],
  },
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 90_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    env: { APP_ENV: 'test', LOG_LEVEL: 'warn' },
    // Transformed modules kept on disk (node_modules/.experimental-vitest-cache, keyed by content):
    // workers read them there instead of asking the main process, and every later run (the
    // guards' one per guard, test:pglite, a developer's next run) skips the transforms.
    experimental: { fsModuleCache: true },
  },
});
