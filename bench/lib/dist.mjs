// Where a build's modules are. `npm run build` lays dist/ out as the repository root is (dist/src/
// for src/, dist/emulator/ for emulator/); a build from before that (BENCH_DIST, --cold-before) has
// src/ compiled flat into dist/. The bench modules take `dist`, the URL of the compiled src/, and
// import the package's own modules through importOwn (test/unit/bench-paths.test.ts checks that
// every path they name has its source in src/).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The compiled src/ of the build whose dist/ folder is `distDir`: `distDir/src`, or `distDir` itself. */
export function srcOutOf(distDir) {
  return existsSync(path.join(distDir, 'src', 'index.js')) ? path.join(distDir, 'src') : distDir;
}

/** URL of the emulator's stack module of the build whose compiled src/ is at `srcOutUrl`. */
export function stackUrlOf(srcOutUrl) {
  const dir = fileURLToPath(srcOutUrl);
  const rootLayout = path.basename(dir) === 'src' && existsSync(path.join(dir, '..', 'emulator', 'stack.js'));
  // Both layouts keep the emulator at <build>/emulator/; only where src/ went differs.
  return pathToFileURL(path.join(rootLayout ? path.dirname(dir) : dir, 'emulator/stack.js')).href;
}

/**
 * Import `rel` (a module of src/, compiled: 'config/index.js') of the compiled src/ at
 * `srcOutUrl`, or `older` (its path in an older layout) where that build predates a move.
 */
export async function importOwn(srcOutUrl, rel, older) {
  const url = `${srcOutUrl.replace(/\/$/, '')}/${rel}`;
  try {
    return await import(url);
  } catch (err) {
    // Only `rel` itself missing falls back; a module it imports that is missing is a broken build.
    if (older === undefined || err?.code !== 'ERR_MODULE_NOT_FOUND' || (err.url && err.url !== url)) throw err;
    return import(`${srcOutUrl.replace(/\/$/, '')}/${older}`);
  }
}
