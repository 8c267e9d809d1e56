// `npm run test:fuzz`: only the fuzz files, with the long run's case count (FUZZ_RUNS, default
// 10,000; FUZZ_SEED picks the sequence; the voice-model property runs VOICE_FUZZ_SEQUENCES,
// default 400). `npm test` runs the same files' seeded quick run.
import { defineConfig } from 'vitest/config';
import base from './vitest.config';

export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    include: ['test/fuzz/**/*.fuzz.test.ts'],
    env: {
      ...base.test?.env,
      FUZZ_RUNS: process.env.FUZZ_RUNS ?? '10000',
      VOICE_FUZZ_SEQUENCES: process.env.VOICE_FUZZ_SEQUENCES ?? '400',
    },
  },
});
