/**
 * Storage's name for the one item codec, src/aws/item-codec.ts (JS value <-> DynamoDB
 * AttributeValue): it lives in the base layer so that every part writes items the same way.
 */
export * from '../../aws/item-codec.js';
