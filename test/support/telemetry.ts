/**
 * The real OpenTelemetry SDK for tests: a tracer provider with an in-memory exporter, a meter
 * provider with a reader collected on demand, the AsyncLocalStorage context manager and the
 * W3C trace-context propagator, registered globally as an application's SDK set-up would.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type CollectionResult,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';

/** A reader the test collects itself (cumulative sums). */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** A metric point as the tests read it: value (sum, gauge or histogram count/sum) and attributes. */
export interface MetricPoint {
  name: string;
  attributes: Record<string, unknown>;
  value: number;
  count?: number;
}

export interface TestTelemetry {
  spans(): ReadableSpan[];
  /** Every point of every instrument of the package, collected now. */
  collect(): Promise<MetricPoint[]>;
  reset(): void;
  shutdown(): Promise<void>;
}

/** Registers the SDK globally; `shutdown` unregisters it. */
export function installTelemetry(): TestTelemetry {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans: () => exporter.getFinishedSpans(),
    async collect() {
      const { resourceMetrics }: CollectionResult = await reader.collect();
      return resourceMetrics.scopeMetrics.flatMap((scope) =>
        scope.metrics.flatMap((metric) =>
          metric.dataPoints.map((point) => {
            const value = point.value as number | { sum?: number; count: number };
            return typeof value === 'number'
              ? { name: metric.descriptor.name, attributes: point.attributes, value }
              : {
                  name: metric.descriptor.name,
                  attributes: point.attributes,
                  value: value.sum ?? 0,
                  count: value.count,
                };
          }),
        ),
      );
    },
    reset: () => exporter.reset(),
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}
