/**
 * Reading a flow request's body, bounded: at most a number of bytes (refused by `content-length`
 * before reading, and while streaming for a body without one or with a false one) and within a
 * time. What is not read is left to the server (it discards it or closes the connection).
 */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
export const DEFAULT_READ_TIMEOUT_MS = 30_000;

export type BodyRead = { ok: true; bytes: Uint8Array } | { ok: false; status: 400 | 408 | 413; error: string };

/** The request body, at most `max` bytes and within `timeoutMs` (see the header). */
export async function readBody(req: Request, max: number, timeoutMs: number): Promise<BodyRead> {
  const tooLarge = { ok: false, status: 413, error: `Request body larger than ${max} bytes` } as const;
  const declared = req.headers.get('content-length');
  if (declared !== null) {
    if (!/^\d+$/.test(declared)) return { ok: false, status: 400, error: 'Malformed content-length' };
    if (Number(declared) > max) return tooLarge;
  }
  if (!req.body) return { ok: true, bytes: new Uint8Array(0) };
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), deadline]);
      if (r === 'timeout') return { ok: false, status: 408, error: 'Request body not received in time' };
      if (r.done) break;
      total += r.value.byteLength;
      if (total > max) return tooLarge;
      chunks.push(r.value);
    }
  } catch {
    return { ok: false, status: 400, error: 'Unreadable request body' };
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  if (chunks.length === 1) return { ok: true, bytes: chunks[0] };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { ok: true, bytes };
}
