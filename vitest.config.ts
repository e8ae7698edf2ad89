import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // The eve end-to-end test needs its own app install and Node 24: `npm run test:eve`.
    exclude: [...configDefaults.exclude, 'test/eve/**', 'test/lambda/**'],
    globalSetup: ['test/setup/global.ts'],
    setupFiles: ['test/setup/polyfills.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time against one shared emulator stack.
    maxWorkers: 2,
    pool: 'forks',
  },
});
