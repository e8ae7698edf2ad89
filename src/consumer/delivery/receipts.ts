/**
 * The receive side's SQS calls: receive a batch, and per received copy (its receipt handle) extend
 * or release its visibility, or delete it. Addresses come from the send side's {@link SqsTransport},
 * which resolves the queue once per process.
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

export interface ReceiveOptions {
  max: number;
  waitTimeSeconds: number;
  /** Visibility of the received copies (s); undefined = the queue's own. */
  visibilitySeconds?: number;
}

export class SqsReceipts {
  private queueVisibility?: Promise<number>;

  constructor(private readonly transport: SqsTransport) {}

  private get sqs() {
    return this.transport.ctx.clients.sqs;
  }

  async receive(opts: ReceiveOptions): Promise<Message[]> {
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

  /**
   * Set the visibility of received copies, ten per request. Answers the receipt handles SQS
   * refused (each entry's own failure: no live receive of this queue); a request that fails throws.
   */
  async changeVisibilityMany(receiptHandles: readonly string[], seconds: number): Promise<string[]> {
    const refused: string[] = [];
    for (let i = 0; i < receiptHandles.length; i += 10) {
      const chunk = receiptHandles.slice(i, i + 10);
      const out = await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: await this.transport.queueUrl(),
          Entries: chunk.map((ReceiptHandle, n) => ({
            Id: String(n),
            ReceiptHandle,
            VisibilityTimeout: Math.max(0, Math.ceil(seconds)),
          })),
        }),
      );
      for (const f of out.Failed ?? []) refused.push(chunk[Number(f.Id)] as string);
    }
    return refused;
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

  /**
   * Delete received copies, ten per request (the SQS batch limit). Answers the receipt handles
   * SQS did not delete (each entry's own failure); a request that fails throws.
   */
  async deleteMany(receiptHandles: readonly string[]): Promise<string[]> {
    const notDeleted: string[] = [];
    for (let i = 0; i < receiptHandles.length; i += 10) {
      const chunk = receiptHandles.slice(i, i + 10);
      const out = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: await this.transport.queueUrl(),
          Entries: chunk.map((ReceiptHandle, n) => ({ Id: String(n), ReceiptHandle })),
        }),
      );
      for (const f of out.Failed ?? []) notDeleted.push(chunk[Number(f.Id)] as string);
    }
    return notDeleted;
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
