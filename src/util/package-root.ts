/**
 * This package's root directory, found from a module of its own: the nearest folder above it whose
 * package.json names this package. A module runs from source (under `src/cli/`, `emulator/`) and
 * compiled (under `dist/src/cli/`, `dist/emulator/`), at different depths, so no module counts `..`
 * steps to the root. Read once per process.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_NAME = '@portfolio/eve-world-aws';

let cached: string | undefined;

/** The package root, from this module's own location. */
export function packageRoot(): string {
  cached ??= findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
  return cached;
}

/** The nearest folder at or above `from` whose package.json is this package's. */
export function findPackageRoot(from: string): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && readName(manifest) === PACKAGE_NAME) return dir;
    if (path.dirname(dir) === dir) throw new Error(`eve-world-aws: no package.json of ${PACKAGE_NAME} above ${from}`);
  }
}

function readName(manifest: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
}
