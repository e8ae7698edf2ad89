// The quick pass (`npm run bench:quick`, or `--quick` on any bench script; CI runs it): every part
// of the bench once, at a small size, so that a moved file or a renamed export breaks the bench
// where CI sees it. Its numbers mean nothing; it writes bench/results/quick.json, never latest.json.
// `--quick` on the command line, or BENCH_QUICK=1 in the environment (how the suite passes it to
// the benches it runs as child processes).

/** True on the quick pass. */
export const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';

/** `full` on a real run, `quick` on the quick pass. */
export const sized = (full, quick) => (QUICK ? quick : full);
