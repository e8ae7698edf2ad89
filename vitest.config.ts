import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    globalSetup: ['test/setup/global.ts'],
    setupFiles: ['test/setup/polyfills.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time against one shared emulator stack.
    maxWorkers: 2,
    pool: 'forks',
  },
});
