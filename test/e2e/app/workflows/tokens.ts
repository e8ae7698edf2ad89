/**
 * A token-streaming workflow: one step writes `n` small chunks `gapMs` apart through
 * `getWritable()` (like an LLM answer), then closes the stream. Each chunk is JSON
 * `{i, t}` (t = wall-clock ms just before write()), so readers check order and measure latency.
 * Used by test/integration/streams/core-reader.test.ts and the streams benchmarks.
 */
import { getWritable } from 'workflow';

async function emitTokens(writable: WritableStream<Uint8Array>, n: number, gapMs: number): Promise<number> {
  'use step';
  const writer = writable.getWriter();
  const enc = new TextEncoder();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const due = t0 + i * gapMs - performance.now();
    if (due > 0) await new Promise((r) => setTimeout(r, due));
    await writer.write(enc.encode(JSON.stringify({ i, t: performance.timeOrigin + performance.now() })));
  }
  await writer.close();
  return n;
}

export async function tokenStream(n: number, gapMs: number): Promise<number> {
  'use workflow';
  return emitTokens(getWritable<Uint8Array>(), n, gapMs);
}
