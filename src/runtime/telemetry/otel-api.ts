/**
 * The OpenTelemetry API as the package uses it, from the one place that loads it.
 * `@opentelemetry/api` is an optional peer dependency: an application that registers an SDK has
 * it installed (every SDK package depends on it), and then this module hands out that copy, so
 * spans and instruments reach the application's provider exactly as a static import did. An
 * application without it (most production installs) gets {@link NOOP_API}: the same calls,
 * answering what the API itself answers when no SDK is registered (non-recording spans, no-op
 * instruments), without installing or loading the package (2 MB on disk).
 *
 * Types come from the package as `import type` only: they vanish from the JavaScript, and the
 * published declarations that reach them are not among those a public entry point imports.
 */
import { createRequire } from 'node:module';
import type {
  Context,
  Counter,
  Histogram,
  Meter,
  MeterProvider,
  ObservableGauge,
  Span,
  SpanContext,
  SpanKind,
  SpanStatusCode,
  TextMapGetter,
  TextMapSetter,
  Tracer,
  TracerProvider,
  UpDownCounter,
  ValueType,
} from '@opentelemetry/api';

/** The part of the OpenTelemetry API the package calls. */
export interface OtelApi {
  readonly context: {
    active(): Context;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: Context,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F>;
  };
  readonly trace: {
    getTracer(name: string): Tracer;
    getTracerProvider(): TracerProvider;
    wrapSpanContext(spanContext: SpanContext): Span;
    setSpan(context: Context, span: Span): Context;
    getSpan(context: Context): Span | undefined;
    getSpanContext(context: Context): SpanContext | undefined;
  };
  readonly propagation: {
    inject<C>(context: Context, carrier: C, setter?: TextMapSetter<C>): void;
    extract<C>(context: Context, carrier: C, getter?: TextMapGetter<C>): Context;
  };
  readonly metrics: { getMeterProvider(): MeterProvider };
  readonly ROOT_CONTEXT: Context;
  readonly INVALID_SPAN_CONTEXT: SpanContext;
  /** The tracer the API's proxy provider hands out while no SDK is registered. */
  readonly ProxyTracer: abstract new (...args: never[]) => object;
  isSpanContextValid(spanContext: SpanContext): boolean;
  readonly SpanKind: typeof SpanKind;
  readonly SpanStatusCode: typeof SpanStatusCode;
  readonly ValueType: typeof ValueType;
}

const ROOT: Context = {
  getValue: () => undefined,
  setValue: () => ROOT,
  deleteValue: () => ROOT,
};

const INVALID_SPAN_CONTEXT: SpanContext = {
  traceId: '0'.repeat(32),
  spanId: '0'.repeat(16),
  traceFlags: 0,
};

const NOOP_SPAN: Span = {
  spanContext: () => INVALID_SPAN_CONTEXT,
  setAttribute: () => NOOP_SPAN,
  setAttributes: () => NOOP_SPAN,
  addEvent: () => NOOP_SPAN,
  addLink: () => NOOP_SPAN,
  addLinks: () => NOOP_SPAN,
  setStatus: () => NOOP_SPAN,
  updateName: () => NOOP_SPAN,
  end: () => undefined,
  isRecording: () => false,
  recordException: () => undefined,
};

/**
 * The tracer without the package: as the API's `ProxyTracer` while no SDK is registered, it
 * hands out non-recording spans (and, being the stand-in's `ProxyTracer`, tells tracing.ts so).
 */
class NoopProxyTracer implements Tracer {
  startSpan(): Span {
    return NOOP_SPAN;
  }
  // Each overload takes the function last and calls it with the span.
  startActiveSpan = ((...args: unknown[]) =>
    (args[args.length - 1] as (span: Span) => unknown)(NOOP_SPAN)) as Tracer['startActiveSpan'];
}
const NOOP_TRACER = new NoopProxyTracer();
const NOOP_TRACER_PROVIDER: TracerProvider = { getTracer: () => NOOP_TRACER };

const NOOP_INSTRUMENT: Counter & Histogram & UpDownCounter = {
  add: () => undefined,
  record: () => undefined,
};
const NOOP_OBSERVABLE: ObservableGauge = {
  addCallback: () => undefined,
  removeCallback: () => undefined,
};
const NOOP_METER: Meter = {
  createGauge: () => NOOP_INSTRUMENT,
  createHistogram: () => NOOP_INSTRUMENT,
  createCounter: () => NOOP_INSTRUMENT,
  createUpDownCounter: () => NOOP_INSTRUMENT,
  createObservableGauge: () => NOOP_OBSERVABLE,
  createObservableCounter: () => NOOP_OBSERVABLE,
  createObservableUpDownCounter: () => NOOP_OBSERVABLE,
  addBatchObservableCallback: () => undefined,
  removeBatchObservableCallback: () => undefined,
};
// One object: the instruments are made again whenever the provider object changes (metrics.ts).
const NOOP_METER_PROVIDER: MeterProvider = { getMeter: () => NOOP_METER };

/**
 * The API without the package: what `@opentelemetry/api` answers with no SDK registered, for
 * the calls the package makes. Values of the enums are the API's (they are part of its contract).
 */
export const NOOP_API: OtelApi = {
  context: {
    active: () => ROOT,
    with: (_context, fn, thisArg, ...args) => fn.apply(thisArg, args),
  },
  trace: {
    getTracer: () => NOOP_TRACER,
    getTracerProvider: () => NOOP_TRACER_PROVIDER,
    wrapSpanContext: () => NOOP_SPAN,
    setSpan: (context) => context,
    getSpan: () => undefined,
    getSpanContext: () => undefined,
  },
  propagation: {
    inject: () => undefined,
    extract: (context) => context,
  },
  metrics: { getMeterProvider: () => NOOP_METER_PROVIDER },
  ROOT_CONTEXT: ROOT,
  INVALID_SPAN_CONTEXT,
  ProxyTracer: NoopProxyTracer,
  isSpanContextValid: () => false,
  SpanKind: { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as typeof SpanKind,
  SpanStatusCode: { UNSET: 0, OK: 1, ERROR: 2 } as typeof SpanStatusCode,
  ValueType: { INT: 0, DOUBLE: 1 } as typeof ValueType,
};

/**
 * The installed `@opentelemetry/api`, else {@link NOOP_API}. Loaded synchronously, once a
 * registration exists: the package's API keeps its state (the registered providers and
 * propagator) on a global, so this copy sees the SDK the application registers, before or
 * after, whichever of its CommonJS or ES module builds the application imported.
 */
export function loadOtelApi(
  require: (id: string) => unknown = createRequire(import.meta.url),
): OtelApi {
  try {
    return require('@opentelemetry/api') as OtelApi;
  } catch (error) {
    // Only its absence means "no telemetry"; a broken install of it is an error to see.
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code === 'MODULE_NOT_FOUND' && String(message).includes("'@opentelemetry/api'")) {
      return NOOP_API;
    }
    throw error;
  }
}

/**
 * Where `@opentelemetry/api` 1.x keeps its registrations (tracer and meter providers, context
 * manager, propagator). Until something registers one, the API answers exactly as
 * {@link NOOP_API} does.
 */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

let installed: OtelApi | undefined;

/**
 * The API to call now: {@link NOOP_API} while nothing is registered on the API's global (so a
 * process without an SDK never loads the package: 51 CommonJS modules at every start), the
 * installed package from the first call that finds a registration on. The per-event paths
 * (telemetry/tracing.ts, metrics.ts) call it once and then the API's objects directly: through
 * {@link otel} each call was a forwarding function too, and `context.with` gathered and spread
 * its arguments again (about 16 such calls per bound event with an SDK registered).
 */
export function currentOtel(): OtelApi {
  if (installed !== undefined) return installed;
  if ((globalThis as Record<symbol, unknown>)[API_GLOBAL] === undefined) return NOOP_API;
  return (installed = loadOtelApi());
}
const current = currentOtel;

/**
 * The API every telemetry module calls: each call goes to {@link current}'s. The enums are the
 * same values either way; `ROOT_CONTEXT` and `ProxyTracer` are those of the API answering now.
 */
export const otel: OtelApi = {
  context: {
    active: () => current().context.active(),
    with: (context, fn, thisArg, ...args) => current().context.with(context, fn, thisArg, ...args),
  },
  trace: {
    getTracer: (name) => current().trace.getTracer(name),
    getTracerProvider: () => current().trace.getTracerProvider(),
    wrapSpanContext: (spanContext) => current().trace.wrapSpanContext(spanContext),
    setSpan: (context, span) => current().trace.setSpan(context, span),
    getSpan: (context) => current().trace.getSpan(context),
    getSpanContext: (context) => current().trace.getSpanContext(context),
  },
  propagation: {
    inject: (context, carrier, setter) => current().propagation.inject(context, carrier, setter),
    extract: (context, carrier, getter) => current().propagation.extract(context, carrier, getter),
  },
  metrics: { getMeterProvider: () => current().metrics.getMeterProvider() },
  // The API's own root context: a registered propagator and context manager set values on it.
  get ROOT_CONTEXT() {
    return current().ROOT_CONTEXT;
  },
  INVALID_SPAN_CONTEXT,
  get ProxyTracer() {
    return current().ProxyTracer;
  },
  isSpanContextValid: (spanContext) => current().isSpanContextValid(spanContext),
  SpanKind: NOOP_API.SpanKind,
  SpanStatusCode: NOOP_API.SpanStatusCode,
  ValueType: NOOP_API.ValueType,
};
