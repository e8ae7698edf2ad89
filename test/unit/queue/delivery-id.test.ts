/**
 * The ids of a message and of its deliveries (src/queue/delivery-id.ts): an early delivery's id is
 * minted from its message's, unlike any other, and reads back to it; any other id is its own.
 */
import { describe, expect, it } from 'vitest';
import { earlyDeliveryId, messageIdOfDelivery } from '../../../src/queue/delivery-id.js';

const M = 'msg_01J8ZQ4Y7W3X2V1T0S9R8Q7P6N';

describe('delivery ids', () => {
  it('an early delivery id names its message and reads back to it', () => {
    const E = earlyDeliveryId(M, '01J8ZQ4Y7W3X2V1T0S9R8Q7P6P');
    expect(E).toBe(`${M}.early.01J8ZQ4Y7W3X2V1T0S9R8Q7P6P`);
    expect(E).not.toBe(M);
    expect(messageIdOfDelivery(E)).toBe(M);
  });

  it('two early deliveries of one message have different ids', () => {
    expect(earlyDeliveryId(M, 'a')).not.toBe(earlyDeliveryId(M, 'b'));
  });

  it('any other id is its own message: a message id, a hostile one, an empty one', () => {
    for (const id of [M, 'msg_anything', '.early.x', 'x.early', '', '注文.early'])
      expect(messageIdOfDelivery(id)).toBe(id);
  });
});
