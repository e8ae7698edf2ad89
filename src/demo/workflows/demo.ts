/**
 * The sample workflow `eve-world-aws demo` runs: steps, a sleep, a hook and a stream, the same
 * shapes an eve agent turn uses. Compiled on first use by the Workflow DevKit builder.
 */
import { createHook, getWritable, sleep } from 'workflow';

async function fetchForecast(city: string): Promise<{ city: string; tempC: number }> {
  'use step';
  // Deterministic stand-in for an API call, so the demo needs no network.
  const tempC = [...city].reduce((a, c) => a + c.charCodeAt(0), 0) % 30;
  return { city, tempC };
}

async function say(writable: WritableStream<Uint8Array>, text: string): Promise<void> {
  'use step';
  const writer = writable.getWriter();
  await writer.write(new TextEncoder().encode(text));
  writer.releaseLock();
}

async function finish(writable: WritableStream<Uint8Array>): Promise<void> {
  'use step';
  await writable.getWriter().close();
}

export async function forecastDemo(cities: string[], approvalToken: string) {
  'use workflow';
  const out = getWritable<Uint8Array>();
  const forecasts = await Promise.all(cities.map((c) => fetchForecast(c)));
  for (const f of forecasts) await say(out, `${f.city}: ${f.tempC} °C\n`);
  await sleep('2s');
  await say(out, 'waiting for approval…\n');
  const approval = await createHook<{ approved: boolean; by: string }>({ token: approvalToken });
  await say(out, `approved=${approval.approved} by ${approval.by}\n`);
  await finish(out);
  return { forecasts, approvedBy: approval.by };
}
