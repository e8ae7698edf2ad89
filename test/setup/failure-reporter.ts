/**
 * A Vitest reporter that prints each failure as it happens, beside the default reporter (which
 * lists failures only at the end of the run, and on a busy machine a long run shows only `×` for
 * many minutes): the test's full name, its file, how long it ran, the machine's load at that
 * moment (a timeout at a load average of 6 on 2 cores reads differently from one on an idle
 * machine), then each error as Vitest prints it (message, diff, code frame). A failing
 * `beforeAll`/`afterAll` and a file that does not load are reported the same way. A green run
 * prints nothing more.
 *
 * Used by vitest.config.ts and test/eve/vitest.config.ts (`reporters: ['default', ...]`).
 */
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import type { Reporter, TestCase, TestModule, TestSuite, Vitest } from 'vitest/node';

export default class FailureReporter implements Reporter {
  private vitest?: Vitest;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestCaseResult(test: TestCase): void {
    const result = test.result();
    if (result.state !== 'failed') return;
    const ms = test.diagnostic()?.duration;
    this.report(test.module, test.fullName, ms, result.errors);
  }

  onTestSuiteResult(suite: TestSuite): void {
    const errors = suite.errors();
    if (errors.length > 0)
      this.report(suite.module, `${suite.fullName} (a beforeAll or afterAll hook)`, undefined, errors);
  }

  onTestModuleEnd(module: TestModule): void {
    const errors = module.errors();
    if (errors.length > 0) this.report(module, '(the file itself: its import or a top-level hook)', undefined, errors);
  }

  private report(module: TestModule, name: string, ms: number | undefined, errors: readonly unknown[]): void {
    const logger = this.vitest?.logger;
    if (!logger) return;
    const file = path.relative(this.vitest?.config.root ?? process.cwd(), module.moduleId);
    const took = ms === undefined ? '' : `after ${(ms / 1000).toFixed(1)} s, `;
    const load = `load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`;
    logger.error(`\nFAIL ${file} > ${name} (${took}${load})`);
    for (const err of errors) logger.printError(err, { project: module.project, showCodeFrame: true });
  }
}
