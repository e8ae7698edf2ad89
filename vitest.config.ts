import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two projects; `npm test` runs both, `npm run test:unit` only the first.
 *
 * - unit: test/unit/**, pure logic. No Java, no emulator, no dist/ build: seconds.
 * - integration: every other test under test/ (test/integration/**, test/e2e/**, test/package/**).
 *   The global setup starts ONE embedded emulator stack (DynamoDB Local + fauxqs) on free ports for
 *   the whole run, builds dist/ and the e2e workflows when the selected files need them, and always
 *   stops the stack.
 * The eve and Lambda-mode end-to-end tests need their own app install and Node 24: `npm run test:eve`.
 */
// The AWS SDK's once-per-process "future SDKs need Node 22" warning (9 lines) would open every test
// process on Node 20; the SDK's own switch turns it off (the CLI's launcher drops it the same way).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export default defineConfig({
  test: {
    setupFiles: ['test/setup/polyfills.ts'],
    // A green run stays quiet: what a passing test logs (core's `[workflow-sdk]` error lines with
    // their stacks for the failures a test provokes on purpose, the World's warnings, a test's
    // own notes) is shown only when that test fails, where it helps.
    silent: 'passed-only',
    // Each failure with its reason as it happens (test/setup/failure-reporter.ts): the default
    // reporter lists them only at the end, and on a busy machine a long run shows only `×` until then.
    reporters: ['default', './test/setup/failure-reporter.ts'],
    // Tests that wait on the wall clock: a child process to start, a delivery to come round, a
    // run to finish while other processes compete. They take their margins from the machine's
    // measured speed (test/helpers/pace.ts); `npm test -- --tags-filter='!timing'` leaves them out.
    tags: [
      {
        name: 'timing',
        description: 'waits on the wall clock; margins scaled by the measured slowdown (test/helpers/pace.ts)',
      },
      {
        name: 'scenario',
        description: 'a whole-system scenario of minutes (the fault suite): CI runs it once, on the default Node',
      },
    ],
    // Two cores: files run two at a time (integration files against one shared emulator stack).
    maxWorkers: 2,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.{ts,tsx}'],
          // Some unit tests parse every source file (layers, dead exports, bench paths): seconds
          // idle, several times that on two cores shared with other work.
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.{ts,tsx}'],
          exclude: [...configDefaults.exclude, 'test/unit/**', 'test/eve/**', 'test/lambda/**'],
          globalSetup: ['test/setup/global.ts'],
          // The compiled e2e workflows (test/e2e/app/.well-known/, a self-contained 8 MB bundle that
          // imports only node: builtins) load as Node loads them: through Vite's transform, every
          // e2e file spent about 25 s parsing and rewriting it before its first test.
          server: { deps: { external: [/\/test\/e2e\/app\/\.well-known\//] } },
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
