/**
 * The EventBridge Scheduler's REST-JSON requests as its emulator (./scheduler.ts) reads them: the
 * operation a method and path name, a body's fields checked one by one, and a list's pages.
 *
 * Invariant: a malformed request is the Scheduler's `ValidationException` (400) naming the field
 * and what it must be; a missing group or schedule is `ResourceNotFoundException` (404).
 */
import { ServiceError } from './service-server.js';

export type Body = Record<string, unknown>;

/** The operations, by method and path. Known operations without a handler answer 501. */
const ROUTES: readonly [string, RegExp, string][] = [
  ['GET', /^\/schedule-groups$/, 'ListScheduleGroups'],
  ['POST', /^\/schedule-groups\/([^/]+)$/, 'CreateScheduleGroup'],
  ['GET', /^\/schedule-groups\/([^/]+)$/, 'GetScheduleGroup'],
  ['DELETE', /^\/schedule-groups\/([^/]+)$/, 'DeleteScheduleGroup'],
  ['GET', /^\/schedules$/, 'ListSchedules'],
  ['POST', /^\/schedules\/([^/]+)$/, 'CreateSchedule'],
  ['GET', /^\/schedules\/([^/]+)$/, 'GetSchedule'],
  ['DELETE', /^\/schedules\/([^/]+)$/, 'DeleteSchedule'],
  ['PUT', /^\/schedules\/([^/]+)$/, 'UpdateSchedule'],
  ['GET', /^\/tags\/(.+)$/, 'ListTagsForResource'],
  ['POST', /^\/tags\/(.+)$/, 'TagResource'],
  ['DELETE', /^\/tags\/(.+)$/, 'UntagResource'],
];

export function route(
  method: string | undefined,
  rawUrl: string | undefined,
): { op: string; name?: string } | undefined {
  const path = new URL(rawUrl ?? '/', 'http://127.0.0.1').pathname;
  for (const [m, re, op] of ROUTES) {
    const hit = m === method ? re.exec(path) : null;
    if (hit) return { op, name: hit[1] === undefined ? undefined : decodeURIComponent(hit[1]) };
  }
  return undefined;
}

export const invalid = (message: string) => new ServiceError('ValidationException', message, 400);
export const notFound = (message: string) => new ServiceError('ResourceNotFoundException', message, 404);

export function str(
  body: Body,
  field: string,
  o: { required?: boolean; max?: number; re?: RegExp } = {},
): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (o.required) throw invalid(`${field} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v.length === 0) throw invalid(`${field} must be a non-empty string`);
  if (o.max !== undefined && v.length > o.max) throw invalid(`${field} must be at most ${o.max} characters`);
  if (o.re && !o.re.test(v)) throw invalid(`${field} "${v}" does not match ${o.re.source}`);
  return v;
}

export function obj(body: Body, field: string, required = false): Body | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (required) throw invalid(`${field} is required`);
    return undefined;
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(`${field} must be an object`);
  return v as Body;
}

export function int(body: Body, field: string, min: number, max: number): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw invalid(`${field} must be a whole number from ${min} to ${max}`);
  return v;
}

export function oneOf<T extends string>(body: Body, field: string, values: readonly T[], fallback?: T): T {
  const v = str(body, field, { required: fallback === undefined }) ?? fallback;
  if (!values.includes(v as T)) throw invalid(`${field} must be one of ${values.join(', ')}`);
  return v as T;
}

export function parseBody(text: string): Body {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw invalid('Request body is not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('Request body must be a JSON object');
  return v as Body;
}

/** A page of `items` (sorted by `key`) after `NextToken`, at most `MaxResults`. */
export function page<T>(items: T[], key: (t: T) => string, query: URLSearchParams): { items: T[]; next?: string } {
  const raw = query.get('MaxResults');
  const max = raw === null ? 100 : Number(raw);
  if (!Number.isInteger(max) || max < 1 || max > 100) throw invalid('MaxResults must be from 1 to 100');
  const token = query.get('NextToken');
  const after = token === null ? undefined : Buffer.from(token, 'base64url').toString('utf8');
  const sorted = items.sort((a, b) => (key(a) < key(b) ? -1 : 1)).filter((t) => after === undefined || key(t) > after);
  const chunk = sorted.slice(0, max);
  return {
    items: chunk,
    next: sorted.length > max ? Buffer.from(key(chunk[chunk.length - 1]), 'utf8').toString('base64url') : undefined,
  };
}
