/**
 * The receive side's SQS calls: receive a batch, and per received copy (its receipt handle) extend
 * or release its visibility, or delete it. Addresses come from the send side's {@link
 * SqsTransport}, which resolves the queue once per process.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SqsTransport } from '../../queue/transport.js';

export class SqsReceipts {
  private queueVisibility?: Promise<number>;

  constructor(private readonly transport: SqsTransport) {}

  private get sqs() {
    return this.transport.ctx.clients.sqs;
  }

  /** `visibilitySeconds`: of the received copies; undefined = the queue's own. */
  async receive(opts: { max: number; waitTimeSeconds: number; visibilitySeconds?: number }): Promise<Message[]> {
    const out = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: await this.transport.queueUrl(),
        MaxNumberOfMessages: Math.max(1, Math.min(10, opts.max)),
        WaitTimeSeconds: opts.waitTimeSeconds,
        VisibilityTimeout: opts.visibilitySeconds,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      }),
    );
    return out.Messages ?? [];
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    await this.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: await this.transport.queueUrl(),
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.ceil(seconds)),
      }),
    );
  }

  /** Set the visibility of received copies; answers the handles SQS refused (no live receive of this queue). */
  changeVisibilityMany(receiptHandles: readonly string[], seconds: number): Promise<string[]> {
    const VisibilityTimeout = Math.max(0, Math.ceil(seconds));
    return this.inBatches(receiptHandles, (QueueUrl, chunk) =>
      this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl,
          Entries: chunk.map((ReceiptHandle, n) => ({ Id: String(n), ReceiptHandle, VisibilityTimeout })),
        }),
      ),
    );
  }

  /** Make a received copy visible again at once (another consumer may take it). */
  release(receiptHandle: string): Promise<void> {
    return this.changeVisibility(receiptHandle, 0);
  }

  async delete(receiptHandle: string): Promise<void> {
    await this.sqs.send(
      new DeleteMessageCommand({ QueueUrl: await this.transport.queueUrl(), ReceiptHandle: receiptHandle }),
    );
  }

  /** Delete received copies; answers the handles SQS did not delete. */
  deleteMany(receiptHandles: readonly string[]): Promise<string[]> {
    return this.inBatches(receiptHandles, (QueueUrl, chunk) =>
      this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl,
          Entries: chunk.map((ReceiptHandle, n) => ({ Id: String(n), ReceiptHandle })),
        }),
      ),
    );
  }

  /**
   * One batch request per ten receipt handles (the SQS batch limit), in turn. Answers the handles
   * of the entries SQS failed (each entry's own failure); a request that fails throws.
   */
  private async inBatches(
    receiptHandles: readonly string[],
    send: (queueUrl: string, chunk: string[]) => Promise<{ Failed?: { Id?: string }[] }>,
  ): Promise<string[]> {
    const failed: string[] = [];
    for (let i = 0; i < receiptHandles.length; i += 10) {
      const chunk = receiptHandles.slice(i, i + 10);
      const out = await send(await this.transport.queueUrl(), chunk);
      for (const f of out.Failed ?? []) failed.push(chunk[Number(f.Id)] as string);
    }
    return failed;
  }

  /**
   * The queue's `VisibilityTimeout` as SQS has it (not as configured): what a copy received
   * without an explicit visibility (the Lambda event source mapping) is hidden for. Read once.
   */
  visibilityInForce(): Promise<number> {
    this.queueVisibility ??= (async () => {
      const out = await this.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: await this.transport.queueUrl(),
          AttributeNames: ['VisibilityTimeout'],
        }),
      );
      const v = Number(out.Attributes?.VisibilityTimeout);
      if (!Number.isFinite(v) || v <= 0) throw new Error('GetQueueAttributes returned no VisibilityTimeout');
      return v;
    })();
    this.queueVisibility.catch(() => {
      this.queueVisibility = undefined;
    });
    return this.queueVisibility;
  }
}
