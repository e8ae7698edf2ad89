/**
 * Spans through `@opentelemetry/api`, an optional peer, loaded the way `@workflow/core` loads it
 * (core's telemetry.js): one dynamic `import('@opentelemetry/api')` with a static specifier (so a
 * bundler inlines it when it is installed), caught when it is absent. The World's spans therefore
 * live in the same trace as core's (`workflow.execute`, `step.execute`, `queue.publish`, …): both
 * read the one global tracer provider and context manager that an SDK registers.
 *
 * Invariants:
 * - No peer, or no SDK registered: `fn` runs as it is, in the caller's context, without an
 *   allocation beyond the no-op span the API hands out (checked once per call, see `open`).
 * - A span never outlives its `fn`, and records the error name (never its message: messages may
 *   quote payload contents) when `fn` throws.
 * - `traceparent` (W3C Trace Context, version 00) is written and read here, independently of the
 *   propagator the application registered, so the header the delivery signs is always that one.
 *
 * Exported signatures use this file's own small types, never the API's, so the package's typings
 * do not require the optional peer.
 */

type Otel = typeof import('@opentelemetry/api');
type OtelSpan = import('@opentelemetry/api').Span;

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What a traced function may do with its span. */
export interface SpanHandle {
  setAttributes(attrs: SpanAttributes): void;
  addEvent(name: string, attrs?: SpanAttributes): void;
}

export type SpanKindName = 'internal' | 'producer' | 'consumer' | 'client' | 'server';

const NOOP_SPAN: SpanHandle = { setAttributes() {}, addEvent() {} };

let api: Otel | null | undefined;
let loading: Promise<Otel | null> | undefined;

/** The API, loaded once; null when the optional peer is not installed. */
function loadOtel(): Promise<Otel | null> {
  loading ??= import('@opentelemetry/api').then(
    (m) => {
      api = (m as Otel & { default?: Otel }).trace ? m : ((m as { default?: Otel }).default ?? null);
      return api;
    },
    () => {
      api = null;
      return null;
    },
  );
  return loading;
}

// Started at import, so the first delivery does not wait for it (the import is the only cost).
void loadOtel();

/** True when the optional peer is installed (an SDK may or may not be registered). */
export async function tracingAvailable(): Promise<boolean> {
  return (await loadOtel()) !== null;
}

/** The API if it has been loaded already (synchronous callers). */
function loadedOtel(): Otel | null | undefined {
  if (api === undefined) void loadOtel();
  return api;
}

const TRACER_NAME = '@portfolio/eve-world-aws';

function clean(attrs: SpanAttributes | undefined): Record<string, string | number | boolean> | undefined {
  if (!attrs) return undefined;
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
}

function handleOf(span: OtelSpan): SpanHandle {
  return {
    setAttributes: (a) => {
      const c = clean(a);
      if (c) span.setAttributes(c);
    },
    addEvent: (name, a) => span.addEvent(name, clean(a)),
  };
}

const KINDS: Record<SpanKindName, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 };

/** The API's tracer, which follows the provider an SDK registers later (the API's ProxyTracer). */
let tracer: import('@opentelemetry/api').Tracer | undefined;

/** A link from a span to another one, named by its `traceparent`, with the link's attributes. */
export interface SpanLinkTo {
  traceparent: string;
  attributes?: SpanAttributes;
}

/** Start a span under the active context; undefined when nothing would record or carry it. */
function open(
  otel: Otel,
  name: string,
  kind: SpanKindName,
  attrs: SpanAttributes | undefined,
  startTime?: number,
  linksTo: readonly SpanLinkTo[] = [],
) {
  tracer ??= otel.trace.getTracer(TRACER_NAME);
  const parent = otel.context.active();
  const links = linksTo.flatMap((l) => {
    const sc = parseTraceparent(l.traceparent);
    return sc ? [{ context: { ...sc, isRemote: true }, attributes: clean(l.attributes) }] : [];
  });
  // Attributes (and links) at the start, where a sampler can see them.
  const options = {
    kind: KINDS[kind],
    attributes: clean(attrs),
    ...(startTime !== undefined ? { startTime } : {}),
    ...(links.length > 0 ? { links } : {}),
  };
  const span = tracer.startSpan(name, options, parent);
  // No SDK: a non-recording span with an invalid context; nothing to carry, skip context.with.
  if (!span.isRecording() && !otel.trace.isSpanContextValid(span.spanContext())) return undefined;
  return { span, ctx: otel.trace.setSpan(parent, span) };
}

/**
 * Run `fn` inside a new span, a child of the active context. `startTime` (epoch ms) back-dates
 * the span's start (a delivery that began before its span could be opened); `links` link it to
 * other spans (a malformed `traceparent` is left out).
 */
export async function withSpan<T>(
  name: string,
  attrs: SpanAttributes | undefined,
  fn: (span: SpanHandle) => Promise<T> | T,
  opts: { kind?: SpanKindName; startTime?: number; links?: readonly SpanLinkTo[] } = {},
): Promise<T> {
  const otel = api === undefined ? await loadOtel() : api;
  if (!otel) return fn(NOOP_SPAN);
  const opened = open(otel, name, opts.kind ?? 'internal', attrs, opts.startTime, opts.links);
  if (!opened) return fn(NOOP_SPAN);
  const { span, ctx } = opened;
  try {
    const out = await otel.context.with(ctx, () => fn(handleOf(span)));
    span.setStatus({ code: otel.SpanStatusCode.OK });
    return out;
  } catch (err) {
    const name = err instanceof Error ? err.name || 'Error' : typeof err;
    span.setAttribute('error.type', name);
    span.setStatus({ code: otel.SpanStatusCode.ERROR, message: name });
    throw err;
  } finally {
    span.end();
  }
}

/** Add an event to the active span, if one records. */
export function activeSpanEvent(name: string, attrs?: SpanAttributes): void {
  const otel = loadedOtel();
  const span = otel?.trace.getActiveSpan();
  if (span?.isRecording()) span.addEvent(name, clean(attrs));
}

// ---- W3C Trace Context -------------------------------------------------------------------------

export const TRACEPARENT_HEADER = 'traceparent';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** `traceparent` of the active span (W3C, version 00), or undefined when there is none. */
export function currentTraceparent(): string | undefined {
  const otel = loadedOtel();
  if (!otel) return undefined;
  const sc = otel.trace.getSpanContext(otel.context.active());
  if (!sc || !otel.trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The parts of a well-formed `traceparent`, or undefined (malformed, all-zero ids). */
export function parseTraceparent(
  value: string | null | undefined,
): { traceId: string; spanId: string; traceFlags: number } | undefined {
  if (!value) return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2], traceFlags: Number.parseInt(m[3], 16) };
}

/**
 * Run `fn` with the remote span of `traceparent` as the active parent (the flow route, for the
 * delivery span of a consumer in another process). Malformed, absent, no API, or the active
 * context is in that trace already: `fn` as it is.
 */
export async function withRemoteParent<T>(traceparent: string | null | undefined, fn: () => Promise<T>): Promise<T> {
  const parsed = parseTraceparent(traceparent);
  if (!parsed) return fn();
  const otel = api === undefined ? await loadOtel() : api;
  if (!otel) return fn();
  const active = otel.trace.getSpanContext(otel.context.active());
  // Already in that trace (an in-process delivery under core's route span, or an HTTP server span
  // an instrumentation continued from the same header): keep the nearer parent.
  if (active && active.traceId === parsed.traceId) return fn();
  const ctx = otel.trace.setSpanContext(otel.context.active(), { ...parsed, isRemote: true });
  return otel.context.with(ctx, fn);
}
