/**
 * The OpenTelemetry SDK as an application would register it, for the tracing-cost benchmark
 * (`<checkout>+otel` in bench/http/cpu.ts and bound-cpu.ts): every span sampled and handed to a
 * batch processor whose exporter drops them, the AsyncLocalStorage context manager, the W3C
 * propagator, and a meter provider whose reader collects every 10 s. What it measures is the
 * cost inside the server of recording spans and metrics, not of sending them.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemoryMetricExporter,
  AggregationTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';

const dropping: SpanExporter = {
  export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
  shutdown: async () => {},
};
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(
  new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: dropping })] }),
);
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
