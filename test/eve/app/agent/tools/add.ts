/**
 * Adds two integers. Side effects for the test, under $EVE_E2E_STATE_DIR (when set):
 * - every execution appends one JSON line to `executions.log` (pid, input, time);
 * - with `slow: true`, the FIRST execution for a given (a, b) writes `hold-<a>-<b>` and then waits
 *   (up to 120 s, or until `release-<a>-<b>` appears) so the test can SIGKILL the eve process
 *   mid-turn. Later executions (the retry after the restart) see the marker and return at once.
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defineTool } from 'eve/tools';
import { z } from 'zod';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export default defineTool({
  description: 'Add two integers and return their sum.',
  inputSchema: z.object({
    a: z.number().int(),
    b: z.number().int(),
    slow: z.boolean().optional(),
  }),
  async execute({ a, b, slow }) {
    const dir = process.env.EVE_E2E_STATE_DIR;
    if (dir) {
      appendFileSync(
        path.join(dir, 'executions.log'),
        `${JSON.stringify({ pid: process.pid, a, b, slow: slow === true, at: new Date().toISOString() })}\n`,
      );
      const hold = path.join(dir, `hold-${a}-${b}`);
      if (slow && !existsSync(hold)) {
        writeFileSync(hold, String(process.pid));
        const release = path.join(dir, `release-${a}-${b}`);
        const deadline = Date.now() + 120_000;
        while (Date.now() < deadline && !existsSync(release)) await sleep(100);
      }
    }
    return { sum: a + b };
  },
});
