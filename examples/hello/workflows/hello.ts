/**
 * A workflow of the example app: two steps, a durable sleep and a stream. `wf build` compiles
 * this folder into the flow route (.well-known/workflow/v1/flow.mjs) that run.mjs serves.
 */
import { getWritable, sleep } from 'workflow';

async function greet(name: string): Promise<string> {
  'use step';
  return `Hello, ${name}!`;
}

async function announce(writable: WritableStream<Uint8Array>, text: string): Promise<void> {
  'use step';
  const writer = writable.getWriter();
  await writer.write(new TextEncoder().encode(`${text}\n`));
  await writer.close();
}

export async function hello(name: string) {
  'use workflow';
  const greeting = await greet(name);
  // Durable: the run waits here without a process holding it (an SQS delay on this World).
  await sleep('1s');
  await announce(getWritable<Uint8Array>(), greeting);
  return { greeting };
}
