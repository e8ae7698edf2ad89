/**
 * What a cold import of a module loads: a fresh Node process registers a load hook (every ESM
 * file) and reads `require.cache` (every CommonJS file: the AWS SDK v3 packages are CommonJS on
 * Node), imports the module, runs `then` (e.g. `m.createWorld()`), and reports the files.
 * In a child process so that nothing the test runner already loaded is counted.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const HOOK = `
import { appendFileSync } from 'node:fs';
let out;
export async function initialize(data) { out = data.out; }
export async function load(url, context, nextLoad) {
  const r = await nextLoad(url, context);
  if (url.startsWith('file:')) appendFileSync(out, url + '\\n');
  return r;
}`;

/**
 * The absolute paths of every file the child loaded for `import(specifier)` followed by `then`
 * (code with the module bound to `m`), resolved from `cwd` (default: the repository, where the
 * package resolves to itself by name through its `exports`).
 */
export function coldImport(
  specifier: string,
  then = '',
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): string[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'eve-cold-import-'));
  const out = path.join(dir, 'esm.txt');
  const code = `
import { register, createRequire } from 'node:module';
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)}, { data: { out: ${JSON.stringify(out)} } });
const m = await import(${JSON.stringify(specifier)});
${then}
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));
process.exit(0);
`;
  try {
    const stdout = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', code], {
      cwd: opts.cwd ?? REPO_ROOT,
      env: opts.env ?? { PATH: process.env.PATH, HOME: process.env.HOME, AWS_REGION: 'us-east-1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const cjs = JSON.parse(stdout.trim().split('\n').pop() ?? '[]') as string[];
    const esm = readFileSync(out, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((u) => fileURLToPath(u));
    return [...new Set([...esm, ...cjs.filter((f) => path.isAbsolute(f))])];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The npm package a file belongs to (`@scope/name` or `name`), or undefined for this package's own files. */
export function packageOf(file: string): string | undefined {
  const i = file.lastIndexOf(`${path.sep}node_modules${path.sep}`);
  if (i < 0) return undefined;
  const rest = file.slice(i + '/node_modules/'.length).split(path.sep);
  return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}
