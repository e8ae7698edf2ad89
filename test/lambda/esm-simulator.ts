/**
 * A small SQS event-source-mapping simulator, for the Lambda-mode end-to-end test.
 *
 * Like Lambda's poller it long-polls the queue, hands each batch to one execution environment
 * (a `runtime.mjs` child process per unit of concurrency, running the deployed worker file) as a
 * real SQS event (the record shape Lambda sends), waits for the result within the function
 * timeout, and then, because the mapping has `ReportBatchItemFailures`, deletes exactly the
 * records NOT listed in `batchItemFailures`. A thrown error or a timeout deletes nothing (the whole
 * batch becomes visible again after the visibility timeout), as in Lambda.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

export interface EsmOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  /** Node binary of the runtime (the test uses Node 24, the worker's runtime). */
  node: string;
  /** Directory of the deployed code and `file.export` handler (the construct's asset + Handler). */
  codeDir: string;
  handler: string;
  /** The function's environment. */
  env: NodeJS.ProcessEnv;
  /** Function timeout (ms): getRemainingTimeInMillis counts down from it. */
  timeoutMs: number;
  batchSize: number;
  /** Execution environments that may run at once (ScalingConfig.MaximumConcurrency). */
  maxConcurrency: number;
  logFile: string;
}

export interface EsmStats {
  invocations: number;
  records: number;
  /** Records deleted after a successful invocation (not listed in batchItemFailures). */
  deleted: number;
  /** Records listed in batchItemFailures (left for redelivery). */
  reportedFailures: number;
  /** Invocations that threw or timed out (nothing deleted). */
  failedInvocations: number;
  /** For every invocation: ids sent, ids reported failed, ids deleted. */
  batches: Array<{ sent: string[]; failed: string[]; deleted: string[] }>;
}

interface Env {
  child: ChildProcess;
  ready: Promise<void>;
  pending: Map<
    string,
    (r: { result?: { batchItemFailures?: Array<{ itemIdentifier: string }> }; error?: string }) => void
  >;
}

/** The SQS record Lambda hands to a function (the fields Lambda documents). */
export function toRecord(m: Message, queueArn: string, region: string) {
  const messageAttributes: Record<string, object> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    messageAttributes[k] = {
      stringValue: v.StringValue,
      binaryValue: v.BinaryValue ? Buffer.from(v.BinaryValue).toString('base64') : undefined,
      stringListValues: [],
      binaryListValues: [],
      dataType: v.DataType,
    };
  }
  return {
    messageId: m.MessageId as string,
    receiptHandle: m.ReceiptHandle as string,
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
      SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
      SenderId: m.Attributes?.SenderId ?? 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes,
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

export class EsmSimulator {
  readonly stats: EsmStats = {
    invocations: 0,
    records: 0,
    deleted: 0,
    reportedFailures: 0,
    failedInvocations: 0,
    batches: [],
  };
  private envs: Env[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly opts: EsmOptions) {}

  private startEnv(): Env {
    const log = createWriteStream(this.opts.logFile, { flags: 'a' });
    const child = spawn(
      this.opts.node,
      [new URL('./runtime.mjs', import.meta.url).pathname, this.opts.codeDir, this.opts.handler],
      {
        env: this.opts.env,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      },
    );
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const pending: Env['pending'] = new Map();
    let onReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      onReady = resolve;
    });
    child.on('message', (m: { type: string; id?: string; result?: never; error?: string }) => {
      if (m.type === 'ready') onReady();
      if (m.type === 'result' && m.id) pending.get(m.id)?.({ result: m.result, error: m.error });
    });
    child.on('exit', () => {
      for (const [, resolve] of pending) resolve({ error: 'runtime exited' });
      pending.clear();
    });
    return { child, ready, pending };
  }

  start(): void {
    for (let i = 0; i < this.opts.maxConcurrency; i++) {
      const env = this.startEnv();
      this.envs.push(env);
      this.loops.push(this.loop(env));
    }
  }

  private async invoke(
    env: Env,
    event: object,
  ): Promise<{ result?: { batchItemFailures?: Array<{ itemIdentifier: string }> }; error?: string }> {
    await env.ready;
    const id = randomUUID();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        env.pending.delete(id);
        resolve({ error: `Task timed out after ${this.opts.timeoutMs} ms` });
      }, this.opts.timeoutMs + 1000);
      env.pending.set(id, (r) => {
        clearTimeout(timer);
        env.pending.delete(id);
        resolve(r);
      });
      env.child.send({ type: 'invoke', id, event, timeoutMs: this.opts.timeoutMs });
    });
  }

  private async loop(env: Env): Promise<void> {
    const region = (await this.opts.sqs.config.region()) ?? 'us-east-1';
    while (!this.stopped) {
      let messages: Message[] = [];
      try {
        const out = await this.opts.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.opts.queueUrl,
            MaxNumberOfMessages: this.opts.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        messages = out.Messages ?? [];
      } catch {
        if (this.stopped) return;
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (messages.length === 0) continue;
      const records = messages.map((m) => toRecord(m, this.opts.queueArn, region));
      this.stats.invocations++;
      this.stats.records += records.length;
      const { result, error } = await this.invoke(env, { Records: records });
      const sent = records.map((r) => r.messageId);
      if (error || !result || !Array.isArray(result.batchItemFailures)) {
        // The invocation failed: Lambda deletes nothing, the batch reappears after the visibility timeout.
        this.stats.failedInvocations++;
        this.stats.batches.push({ sent, failed: sent, deleted: [] });
        continue;
      }
      const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
      const toDelete = records.filter((r) => !failed.has(r.messageId));
      if (toDelete.length > 0) {
        await this.opts.sqs
          .send(
            new DeleteMessageBatchCommand({
              QueueUrl: this.opts.queueUrl,
              Entries: toDelete.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
            }),
          )
          .catch(() => {});
      }
      this.stats.deleted += toDelete.length;
      this.stats.reportedFailures += failed.size;
      this.stats.batches.push({ sent, failed: [...failed], deleted: toDelete.map((r) => r.messageId) });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.race([Promise.all(this.loops), new Promise((r) => setTimeout(r, 5000))]);
    for (const env of this.envs) {
      if (env.child.exitCode === null && env.child.signalCode === null) env.child.kill('SIGKILL');
    }
  }
}
