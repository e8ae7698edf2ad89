// Regenerates the configuration tables of docs/configuration.md from src/config/ (through
// src/config/docs.ts, bundled on the fly with esbuild, so no build is needed).
//
//   node scripts/docs-config.mjs           rewrite the tables in place
//   node scripts/docs-config.mjs --check   exit 1 if the file is stale (what the unit test checks)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOC = path.join(ROOT, 'docs/configuration.md');

const out = await build({
  entryPoints: [path.join(ROOT, 'src/config/docs.ts')],
  bundle: true,
  format: 'esm',
  platform: 'node',
  write: false,
});
const { renderConfigurationDoc } = await import(
  `data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`
);
const before = readFileSync(DOC, 'utf8');
const after = renderConfigurationDoc(before);
if (process.argv.includes('--check')) {
  if (after !== before) {
    console.error('docs/configuration.md is stale: run npm run docs:config');
    process.exit(1);
  }
} else if (after !== before) {
  writeFileSync(DOC, after);
  console.log('docs/configuration.md: tables updated');
} else {
  console.log('docs/configuration.md: up to date');
}
