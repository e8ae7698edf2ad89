/**
 * The settings among `createWorld()`'s own options (`CreateWorldOptions` in src/index.ts), not
 * variables: one row each, whose default the code that takes it reads (catalogue.ts). (`config`,
 * `tuning`, `clients`, `consumer` and `runKeys` are objects or other tables, not settings.)
 */
import { option } from './setting.js';

export const WORLD_OPTIONS = {
  resolvePayloads: option({
    name: 'resolvePayloads',
    default: true,
    values: '`true` / `false`',
    description:
      '`false`: S3 pointers in stored run, step, event and hook payloads come back as the pointers themselves instead of being downloaded, so an operator preview (`eve-world-aws tail` without `--data`) never reads S3. Stream chunks are unaffected.',
  }),
} as const;
