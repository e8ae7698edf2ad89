/**
 * An agent session, as eve runs one: one hook receives every user message; each turn runs a step
 * (the "model call") and then a step that streams its reply in `chunks` chunks through
 * `getWritable()` and releases the writer (the session's stream stays open across turns). Each
 * chunk is `{ turn, i, last }`, so a client knows when a turn's reply is complete.
 * Used by the session benchmark (bench/session.mjs).
 */
import { createHook, getWritable } from 'workflow';

async function think(turn: number, text: string): Promise<string> {
  'use step';
  return `turn ${turn}: ${text.length} characters`;
}

async function reply(
  writable: WritableStream<{ turn: number; i: number; last: boolean }>,
  turn: number,
  chunks: number,
): Promise<number> {
  'use step';
  const writer = writable.getWriter();
  for (let i = 0; i < chunks; i++) await writer.write({ turn, i, last: i === chunks - 1 });
  writer.releaseLock();
  return chunks;
}

export async function chatSession(token: string, turns: number, chunks: number): Promise<number> {
  'use workflow';
  const hook = createHook<{ turn: number; text: string }>({ token });
  const writable = getWritable<{ turn: number; i: number; last: boolean }>();
  let done = 0;
  for await (const message of hook) {
    await think(message.turn, message.text);
    await reply(writable, message.turn, chunks);
    done += 1;
    if (done >= turns) break;
  }
  return done;
}
