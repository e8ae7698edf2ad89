/**
 * Unit tests for the block item codec in src/streams/block-items.ts: the optional `nx` hint (when a
 * writer mid-burst expects its next block) decodes to `nextAt` only when it is a number.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { keys } from '../../../src/schema/keys.js';
import { toBlock } from '../../../src/streams/block-items.js';

const block = (extra: Record<string, AttributeValue>): Record<string, AttributeValue> => ({
  PK: { S: keys.stream('wrun_x', 's') },
  SK: { S: keys.chunkSk(7) },
  w: { S: 'tok.1' },
  c: { L: [{ B: new Uint8Array([1]) }, { NULL: true }] },
  ...extra,
});

describe('toBlock', () => {
  it('decodes the writer hint `nx` as nextAt', () => {
    const b = toBlock(block({ nx: { N: '1764576000123' } }));
    expect(b).toMatchObject({ first: 7, eof: false, token: 'tok.1', nextAt: 1764576000123 });
    expect(b.chunks).toHaveLength(2);
  });

  it('leaves nextAt out without a hint or with a malformed one', () => {
    expect(toBlock(block({}))).not.toHaveProperty('nextAt');
    expect(toBlock(block({ nx: { N: 'soon' } }))).not.toHaveProperty('nextAt');
    expect(toBlock(block({ nx: { S: '1764576000123' } }))).not.toHaveProperty('nextAt');
  });
});
