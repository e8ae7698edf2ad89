/**
 * An in-memory OpenTelemetry SDK for tests: registers a tracer provider that keeps every ended
 * span, and the AsyncLocalStorage context manager, as an application's SDK setup would. Global
 * for the process (one test file per worker process).
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface InMemoryTracing {
  exporter: InMemorySpanExporter;
  spans(): ReadableSpan[];
  reset(): void;
  shutdown(): Promise<void>;
}

export function registerInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** The parent span id of a span (SDK 2.x `parentSpanContext`, 1.x `parentSpanId`). */
export function parentOf(s: ReadableSpan): string | undefined {
  const r = s as ReadableSpan & { parentSpanId?: string; parentSpanContext?: { spanId: string } };
  return r.parentSpanContext?.spanId ?? r.parentSpanId;
}
