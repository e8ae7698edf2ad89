// Run a child process to completion, collecting its output and timing it from spawn to exit.
import { spawn } from 'node:child_process';

/** Resolves `{ ms, out }`; rejects on a non-zero exit with the tail of stderr. */
export function runChild(command, args, { env, cwd, what = command } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${what} exited ${code}:\n${err.slice(-3000)}`));
      resolve({ ms: performance.now() - t0, out });
    });
  });
}
