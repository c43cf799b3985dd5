/**
 * The OpenTelemetry SDK as an application would register it, for the tracing-cost benchmark
 * (`<checkout>+otel` in bench/http/cpu.ts and bound-cpu.ts): every span sampled and handed to a
 * batch processor whose exporter drops them, the AsyncLocalStorage context manager, the W3C
 * propagator, and a meter provider whose reader collects every 10 s. What it measures is the
 * cost inside the server of recording spans and metrics, not of sending them.
 *
 * BENCH_OTEL_PARTS (comma-separated, default all) registers only some of it: `context` (the
 * context manager, enabled at once as a batch processor's first export would enable it, and
 * the propagator), `traces`, `metrics`.
 */
import { context, metrics, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemoryMetricExporter,
  AggregationTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';

const parts = new Set((process.env.BENCH_OTEL_PARTS ?? 'context,traces,metrics').split(','));
const dropping: SpanExporter = {
  export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
  shutdown: async () => {},
};
if (parts.has('context')) {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // AsyncLocalStorage turns its async hooks on at its first run(), for good.
  context.with(ROOT_CONTEXT.setValue(Symbol('bench'), true), () => {});
}
if (parts.has('traces'))
  trace.setGlobalTracerProvider(
    new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: dropping })] }),
  );
if (parts.has('metrics'))
  metrics.setGlobalMeterProvider(
    new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA),
          exportIntervalMillis: 10_000,
        }),
      ],
    }),
  );
