/**
 * The stream reads against DynamoDB: the last block (the tail), the block holding an index, a
 * forward page of blocks, and the GSI listing of a run's streams. All chunk reads are consistent.
 */
import { type AttributeValue, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { readInput, when } from '../aws/expression.js';
import { ATTR, GSI1, keys } from '../schema/keys.js';
import { type Block, LAST_CHUNK_SK, toBlock } from './block-items.js';

export interface Page {
  blocks: Block[];
  /** The 1 MB page (or the item limit) ended before the last block. */
  truncated: boolean;
}

export class StreamQueries {
  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly table: string,
  ) {}

  /** One consistent Query over the stream's block keys from chunk `lo` to chunk key `hi`. */
  private range(
    runId: string,
    name: string,
    lo: number,
    hi: string,
    opts: { backward?: boolean; limit?: number; signal?: AbortSignal },
  ) {
    return this.ddb.send(
      new QueryCommand({
        TableName: this.table,
        ...readInput({
          key: [when.is(ATTR.pk, keys.stream(runId, name)), when.between(ATTR.sk, keys.chunkSk(lo), hi)],
        }),
        ...(opts.backward ? { ScanIndexForward: false } : {}),
        Limit: opts.limit,
        ConsistentRead: true,
      }),
      { abortSignal: opts.signal },
    );
  }

  /** The last block at or before chunk index `index` (the whole stream when omitted); undefined for none. */
  async lastBlock(runId: string, name: string, index?: number, signal?: AbortSignal): Promise<Block | undefined> {
    const hi = index === undefined ? LAST_CHUNK_SK : keys.chunkSk(index);
    const out = await this.range(runId, name, 0, hi, { backward: true, limit: 1, signal });
    const item = out.Items?.[0];
    return item ? toBlock(item) : undefined;
  }

  /** Blocks from key `from` on, in order (at most `limit` items when given). */
  async blocksFrom(
    runId: string,
    name: string,
    from: number,
    opts: { limit?: number; signal?: AbortSignal } = {},
  ): Promise<Page> {
    const out = await this.range(runId, name, from, LAST_CHUNK_SK, opts);
    return { blocks: (out.Items ?? []).map(toBlock), truncated: out.LastEvaluatedKey !== undefined };
  }

  /** Stream names of a run (one GSI1 query per page; only block 0 carries the GSI keys). */
  async names(runId: string): Promise<string[]> {
    const names: string[] = [];
    let from: Record<string, AttributeValue> | undefined;
    do {
      const out = await this.ddb.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: GSI1,
          ...readInput({ key: [when.is(ATTR.gsi1pk, keys.runStreamsGsi(runId))], projection: [ATTR.gsi1sk] }),
          ExclusiveStartKey: from,
        }),
      );
      for (const item of out.Items ?? []) names.push(item[ATTR.gsi1sk].S as string);
      from = out.LastEvaluatedKey;
    } while (from);
    return names;
  }
}
