/**
 * Past an item's `ttl`, reads treat it as gone even before DynamoDB's background TTL sweep
 * (typically within a day or two) deletes it. The TTL is stamped by retention (../write/retention.ts).
 */
import { ATTR } from '../../ddb.js';
import type { Attrs } from '../table/codec.js';

/** Whether an item's TTL has passed (DynamoDB may not have deleted it yet). */
export function expired(item: Attrs | undefined, now = Date.now()): boolean {
  const ttl = item?.[ATTR.ttl]?.N;
  return ttl !== undefined && Number(ttl) * 1000 <= now;
}
