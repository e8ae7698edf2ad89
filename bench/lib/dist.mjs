// Where a build's modules are. `npm run build` lays dist/ out as the repository root is (dist/src/
// for src/, dist/emulator/ for emulator/); a build from before that (BENCH_DIST, --cold-before) has
// src/ compiled flat into dist/. The bench modules take `dist`, the URL of the compiled src/.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled src/ of the build whose dist/ folder is `distDir`: `distDir/src`, or `distDir` itself. */
export function srcOutOf(distDir) {
  return existsSync(path.join(distDir, 'src', 'index.js')) ? path.join(distDir, 'src') : distDir;
}

/** URL of the emulator's stack module of the build whose compiled src/ is at `srcOutUrl`. */
export function stackUrlOf(srcOutUrl) {
  const dir = fileURLToPath(srcOutUrl);
  const rootLayout = path.basename(dir) === 'src' && existsSync(path.join(dir, '..', 'emulator', 'stack.js'));
  return new URL(rootLayout ? '../emulator/stack.js' : 'emulator/stack.js', `${srcOutUrl.replace(/\/$/, '')}/`).href;
}

/** Import `rel` of the compiled src/ at `srcOutUrl`, or `older` where the build predates a move. */
export async function importOwn(srcOutUrl, rel, older) {
  try {
    return await import(`${srcOutUrl}/${rel}`);
  } catch (err) {
    if (older === undefined || err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    return import(`${srcOutUrl}/${older}`);
  }
}
