/**
 * A stand-in for one Lambda execution environment (nodejs24.x): a separate process with the
 * function's own environment that imports the deployed handler file once (the "init" phase) and
 * then runs one invocation at a time, with a Lambda context whose getRemainingTimeInMillis counts
 * down to the function timeout. Invocations arrive over IPC from the event-source-mapping
 * simulator (esm-simulator.ts).
 *
 * Usage: node runtime.mjs <code dir> <file.export>   (e.g. dist/lambda-worker index.handler)
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [codeDir, handlerSpec] = process.argv.slice(2);
const [file, exportName] = handlerSpec.split('.');
const mod = await import(pathToFileURL(path.join(codeDir, `${file}.mjs`)).href);
const handler = mod[exportName];
if (typeof handler !== 'function') throw new Error(`${handlerSpec}: no exported function "${exportName}"`);

let busy = false;
process.on('message', async (msg) => {
  if (msg?.type !== 'invoke') return;
  if (busy) {
    process.send({ type: 'result', id: msg.id, error: 'execution environment is busy (one invocation at a time)' });
    return;
  }
  busy = true;
  const deadline = Date.now() + msg.timeoutMs;
  const context = {
    awsRequestId: msg.id,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '256',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    const result = await handler(msg.event, context);
    process.send({ type: 'result', id: msg.id, result });
  } catch (err) {
    process.send({ type: 'result', id: msg.id, error: String(err?.stack ?? err) });
  } finally {
    busy = false;
  }
});
process.send({ type: 'ready' });
