// Module customization hooks (registered with module.register by the cold-start bench's graph
// probe): append every file: URL the ESM loader loads to the file named in `data.out`.
import { appendFileSync } from 'node:fs';

let out;
export async function initialize(data) {
  out = data.out;
}
export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (out && url.startsWith('file:')) appendFileSync(out, `${url}\n`);
  return result;
}
