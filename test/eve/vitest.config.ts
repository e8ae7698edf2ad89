/**
 * The eve end-to-end test runs on its own: it builds an eve app (~15 s) and drives real `eve start`
 * processes on Node 24, so the main `npm test` excludes it and `npm run test:eve` runs it.
 * Same global emulator stack as the main suite.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/eve/**/*.test.ts', 'test/lambda/**/*.test.ts'],
    globalSetup: ['test/setup/global.ts'],
    setupFiles: ['test/setup/polyfills.ts'],
    // Each failure with its reason as it happens (test/setup/failure-reporter.ts).
    reporters: ['default', './test/setup/failure-reporter.ts'],
    testTimeout: 180_000,
    hookTimeout: 240_000,
    pool: 'forks',
    maxWorkers: 1,
    // One file, steps in order: a later step depends on the session state of an earlier one.
    sequence: { concurrent: false },
  },
});
