/**
 * Formatting shared by the operator commands (tail, runs, redrive, doctor): times, durations, byte
 * previews and JSON-safe values. Pure functions: the ink view and the plain/NDJSON writers agree.
 */
import * as zlib from 'node:zlib';
import { InvalidArgumentError, Option } from 'commander';
import { isS3Pointer } from '../../context/payload-store.js';

/** `2026-11-30 12:34:56Z`: UTC, second precision, sortable; '-' when absent. */
export function formatTime(d: Date | string | number | undefined): string {
  if (d === undefined || d === null) return '-';
  const date = d instanceof Date ? d : new Date(d);
  if (Number.isNaN(date.getTime())) return '-';
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** `12:34:56.789`: the time of day (UTC) for event lines, where the date is in the header. */
export function formatClock(d: Date | string | number | undefined): string {
  if (d === undefined || d === null) return '-';
  const date = d instanceof Date ? d : new Date(d);
  if (Number.isNaN(date.getTime())) return '-';
  return date.toISOString().slice(11, 23);
}

/** `850ms`, `2.4s`, `3m05s`, `2h03m`, `3d04h`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `90s`, `15m`, `1h30m`, `2d` -> milliseconds. Commander parser. A unit is required: a bare number
 * (`--older-than 5`) is a usage error that shows the forms, because no one unit is what every user
 * means by it (5 seconds would delete what 5 days was meant to keep).
 */
export function parseDuration(value: string): number {
  const v = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(v))
    throw new InvalidArgumentError(
      `needs a unit: ${v}d (days), ${v}h (hours), ${v}m (minutes) or ${v}s (seconds); forms can be combined, e.g. 1h30m.`,
    );
  let total = 0;
  let consumed = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) {
    total += Number(m[1]) * UNITS[m[2]];
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== v.length)
    throw new InvalidArgumentError('must be a duration such as 30s, 15m, 1h or 2d.');
  return total;
}

/** `3600000` -> `1h`, `90000` -> `90s`: the largest unit that divides it (for `--help` defaults). */
export function durationText(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'])
    if (ms >= UNITS[unit] && ms % UNITS[unit] === 0) return `${ms / UNITS[unit]}${unit}`;
  return `${ms}ms`;
}

/** A `<duration>` option (parsed by `parseDuration`) whose `--help` shows its default as `1h`, not `3600000`. */
export function durationOption(flags: string, description: string, defaultMs: number): Option {
  return new Option(flags, description).argParser(parseDuration).default(defaultMs, durationText(defaultMs));
}

export function parsePositiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('must be a positive whole number.');
  return Number(value);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 text of `bytes`, or undefined when they are not valid UTF-8 (or hold control bytes). */
export function utf8(bytes: Uint8Array): string | undefined {
  try {
    const text = decoder.decode(bytes);
    // NUL and most C0 controls mean "binary" for display purposes; tabs and newlines are text.
    return /[\u0000-\u0008\u000e-\u001f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Serialization format prefixes of @workflow/core payloads (4 ASCII bytes) that hide their content. */
const OPAQUE_FORMATS = new Set(['encr', 'encp', 'gzip', 'zstd']);

/** The 4-byte format prefix of a payload ('' when shorter). */
function formatPrefix(bytes: Uint8Array): string {
  return bytes.byteLength >= 4 ? String.fromCharCode(...bytes.subarray(0, 4)) : '';
}

/** zstd decoding: node:zlib has it from Node 22.15 (absent from the Node 20 typings). */
const zstdDecompressSync = (zlib as { zstdDecompressSync?: (b: Uint8Array) => Buffer }).zstdDecompressSync;

/**
 * The payload inside a compressed one, for display: the runtime writes `gzip` + gzip(`devl` ...) or
 * `zstd` + zstd(`devl` ...) for payloads of 1 KiB and more (errors with their stacks, large
 * results). Undefined when not compressed or not decodable here (no zstd in this Node, corrupt).
 */
export function decompressed(bytes: Uint8Array): Uint8Array | undefined {
  const prefix = formatPrefix(bytes);
  if (prefix !== 'gzip' && prefix !== 'zstd') return undefined;
  try {
    const body = bytes.subarray(4);
    if (prefix === 'gzip') return new Uint8Array(zlib.gunzipSync(body));
    return zstdDecompressSync ? new Uint8Array(zstdDecompressSync(body)) : undefined;
  } catch {
    return undefined;
  }
}

const DEVALUE_SPECIAL: Record<number, unknown> = {
  [-1]: undefined,
  [-2]: undefined,
  [-3]: Number.NaN,
  [-4]: Number.POSITIVE_INFINITY,
  [-5]: Number.NEGATIVE_INFINITY,
  [-6]: -0,
};

/**
 * Display-only reading of devalue text (the runtime's `devl` payloads): devalue stores values in
 * one array and refers to them by index, so `{ok: true}` is `[{"ok":1},true]`; this rebuilds a
 * plain value for previews and `--json`. Tagged values (`["Date", iso]`, custom classes such as
 * errors) become `{Tag: value}`. Returns undefined when the text is not devalue.
 */
export function fromDevalue(text: string): { value: unknown } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed === 'number') return parsed in DEVALUE_SPECIAL ? { value: DEVALUE_SPECIAL[parsed] } : undefined;
  if (!Array.isArray(parsed) || parsed.length === 0) return undefined;
  const values = parsed as unknown[];
  const memo = new Map<number, unknown>();
  let valid = true;
  const hydrate = (i: unknown, depth: number): unknown => {
    if (depth > 64) return '…';
    // Text that merely looks like JSON (not devalue) refers to indices that do not exist.
    if (typeof i !== 'number' || !Number.isInteger(i) || i >= values.length || (i < 0 && !(i in DEVALUE_SPECIAL))) {
      valid = false;
      return undefined;
    }
    if (i < 0) return DEVALUE_SPECIAL[i];
    if (memo.has(i)) return memo.get(i);
    const v = values[i];
    let out: unknown = v;
    if (Array.isArray(v)) {
      if (typeof v[0] === 'string') {
        const [tag, ...args] = v as [string, ...unknown[]];
        if (tag === 'Date' || tag === 'BigInt' || tag === 'RegExp' || tag === 'ArrayBuffer' || tag === 'URL')
          out = tag === 'BigInt' ? `${args[0]}n` : args[0];
        else if (tag === 'Map') {
          const m: Record<string, unknown> = {};
          for (let k = 0; k + 1 < args.length; k += 2)
            m[String(hydrate(args[k], depth + 1))] = hydrate(args[k + 1], depth + 1);
          out = { Map: m };
        } else if (tag === 'Set') out = { Set: args.map((a) => hydrate(a, depth + 1)) };
        else if (tag === 'null') {
          // A null-prototype object: ["null", key, index, key, index, ...].
          const o: Record<string, unknown> = {};
          for (let k = 0; k + 1 < args.length; k += 2) o[String(args[k])] = hydrate(args[k + 1], depth + 1);
          out = o;
        } else
          out = { [tag]: args.length === 1 ? hydrate(args[0], depth + 1) : args.map((a) => hydrate(a, depth + 1)) };
      } else {
        out = v.map((x) => hydrate(x, depth + 1));
      }
    } else if (v !== null && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      memo.set(i, o);
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) o[k] = hydrate(x, depth + 1);
      out = o;
    }
    memo.set(i, out);
    return out;
  };
  const value = hydrate(0, 0);
  return valid ? { value } : undefined;
}

/** A value as compact JSON for previews (undefined shown as `undefined`). */
function compactJson(v: unknown): string {
  if (v === undefined) return 'undefined';
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * One-line preview of a serialized payload: the devalue value of a `devl` payload as compact
 * JSON, a marker for encrypted or compressed payloads, other UTF-8 text as is, or hex.
 */
export function previewBytes(bytes: Uint8Array): string {
  const inner = decompressed(bytes);
  if (inner) return previewBytes(inner);
  const prefix = formatPrefix(bytes);
  if (OPAQUE_FORMATS.has(prefix)) return `<${prefix} ${bytes.byteLength} B>`;
  const body = prefix === 'devl' ? bytes.subarray(4) : bytes;
  const text = utf8(body);
  if (text === undefined) return `0x${hex(body.subarray(0, 32))}${body.byteLength > 32 ? '…' : ''}`;
  if (prefix === 'devl') {
    const d = fromDevalue(text);
    if (d) return compactJson(d.value);
  }
  return text;
}

/** Short one-line preview of any stored value (event data fields, errors). */
export function previewValue(v: unknown): string {
  if (v === undefined) return '';
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return previewBytes(v);
  if (v instanceof Date) return v.toISOString();
  if (isS3Pointer(v)) return `<s3 ${v.__s3}${typeof v.size === 'number' ? ` ${v.size} B` : ''}>`;
  if (typeof v === 'string') return v;
  if (typeof v !== 'object') return String(v);
  if (Array.isArray(v)) return `[${v.map(previewValue).join(', ')}]`;
  return Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .map(([k, x]) => `${k}=${previewValue(x)}`)
    .join(' ');
}

/** `o[key]` when `o` is an object and that is a string. */
export function stringField(o: unknown, key: string): string | undefined {
  const v = o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** `1 run`, `2 runs`: `n` and `noun`, plural unless `n` is 1. */
export const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** Collapse whitespace and cut to `max` characters. */
export function truncate(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, Math.max(0, max - 1))}…` : one;
}

/**
 * A JSON-safe copy of a stored value for --json output: bytes become `{bytes, text}` (UTF-8) or
 * `{bytes, base64}`, dates ISO strings, S3 pointers `{s3, size}`; everything else as is.
 */
export function jsonSafe(v: unknown): unknown {
  if (v === undefined || v === null) return v;
  if (v instanceof Uint8Array) {
    // A compressed payload also carries what it decompresses to.
    const inner = decompressed(v);
    if (inner) return { bytes: v.byteLength, format: formatPrefix(v), decompressed: jsonSafe(inner) };
    const text = utf8(v);
    if (text === undefined) return { bytes: v.byteLength, base64: Buffer.from(v).toString('base64') };
    // A `devl` payload also carries its decoded value, so jq can reach into it.
    const decoded = text.startsWith('devl') ? fromDevalue(text.slice(4)) : undefined;
    return decoded ? { bytes: v.byteLength, text, value: jsonSafe(decoded.value) } : { bytes: v.byteLength, text };
  }
  if (v instanceof Date) return v.toISOString();
  if (isS3Pointer(v)) return { s3: v.__s3, size: v.size };
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) if (x !== undefined) out[k] = jsonSafe(x);
    return out;
  }
  return v;
}

/**
 * Error text from a stored run/step error (a structured error, a string, or bytes): `Name: message`
 * when the error has a name (`TypeError: ...`, `FatalError: ...`), else its message.
 */
export function errorText(e: unknown): string | undefined {
  if (e === undefined || e === null) return undefined;
  if (typeof e === 'string') return e;
  if (e instanceof Uint8Array) {
    // A serialized error (possibly compressed): its name and message when it decodes to an error.
    const payload = decompressed(e) ?? e;
    const text = payload.byteLength > 4 ? utf8(payload) : undefined;
    const decoded = text?.startsWith('devl') ? fromDevalue(text.slice(4)) : undefined;
    return (decoded && findError(decoded.value)) ?? previewBytes(e);
  }
  const o = e as { message?: unknown; code?: unknown };
  if (typeof o.message === 'string') return typeof o.code === 'string' ? `${o.code}: ${o.message}` : o.message;
  return previewValue(e);
}

/**
 * `Name: message` of the first error in a decoded value. Errors decode as `{Error: {name, message,
 * stack}}`, or under their class tag without a name (`{FatalError: {message, stack}}`), possibly
 * wrapped; a bare `{message}` gives just the message.
 */
function findError(v: unknown, tag?: string, depth = 0): string | undefined {
  if (v === null || typeof v !== 'object' || depth > 3) return undefined;
  const { name, message } = v as { name?: unknown; message?: unknown };
  if (typeof message === 'string') {
    const n = typeof name === 'string' && name ? name : tag;
    return n ? `${n}: ${message}` : message;
  }
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const found = findError(x, /^[A-Z]\w*$/.test(k) ? k : undefined, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** `step//./src/workflows/order//chargeCard` -> `chargeCard` (for narrow columns; JSON keeps the full name). */
export function shortName(name: string): string {
  const i = name.lastIndexOf('//');
  return i >= 0 && i + 2 < name.length ? name.slice(i + 2) : name;
}
