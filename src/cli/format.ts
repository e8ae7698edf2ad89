/**
 * Formatting shared by the operator commands (tail, runs, redrive, doctor): times, durations,
 * byte previews and JSON-safe values. Pure functions, so the ink view and the plain/NDJSON
 * writers show the same thing.
 */
import { InvalidArgumentError } from 'commander';
import { isS3Pointer } from '../payloads.js';

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

/** `90s`, `15m`, `1h30m`, `2d` -> milliseconds (a bare number is seconds). Commander parser. */
export function parseDuration(value: string): number {
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of v.matchAll(re)) {
    total += Number(m[1]) * UNITS[m[2]];
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== v.length) {
    throw new InvalidArgumentError('must be a duration such as 30s, 15m, 1h or 2d.');
  }
  return total;
}

export function parsePositiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('must be a positive whole number.');
  return Number(value);
}

export function parseNonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number >= 0.');
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

/** Serialization format prefixes of @workflow/core payloads (4 ASCII bytes). */
const OPAQUE_FORMATS = new Set(['encr', 'encp', 'gzip', 'zstd']);

/**
 * One-line preview of a serialized payload: devalue text without its `devl` prefix, a marker for
 * encrypted or compressed payloads, UTF-8 text, or hex.
 */
export function previewBytes(bytes: Uint8Array): string {
  const prefix = bytes.byteLength >= 4 ? String.fromCharCode(...bytes.subarray(0, 4)) : '';
  if (OPAQUE_FORMATS.has(prefix)) return `<${prefix} ${bytes.byteLength} B>`;
  const body = prefix === 'devl' ? bytes.subarray(4) : bytes;
  const text = utf8(body);
  return text !== undefined ? text : `0x${hex(body.subarray(0, 32))}${body.byteLength > 32 ? '…' : ''}`;
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
  const parts = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .map(([k, x]) => `${k}=${previewValue(x)}`);
  return parts.join(' ');
}

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
    const text = utf8(v);
    return text !== undefined ? { bytes: v.byteLength, text } : { bytes: v.byteLength, base64: Buffer.from(v).toString('base64') };
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

/** Error text from a stored run/step error (a structured error, a string, or bytes). */
export function errorText(e: unknown): string | undefined {
  if (e === undefined || e === null) return undefined;
  if (typeof e === 'string') return e;
  if (e instanceof Uint8Array) return previewBytes(e);
  const o = e as { message?: unknown; code?: unknown };
  if (typeof o.message === 'string') return typeof o.code === 'string' ? `${o.code}: ${o.message}` : o.message;
  return previewValue(e);
}

/** One NDJSON line. */
export function ndjson(record: unknown): string {
  return `${JSON.stringify(record)}\n`;
}
