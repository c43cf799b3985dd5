/**
 * Traces on the OpenTelemetry API (docs/operating.md "Traces"). The package only calls the API:
 * the application registers an SDK and an exporter, or nothing, in which case every span here is
 * the API's non-recording span and nothing is built for it (no attributes, no links).
 *
 * Work that a step leaves for later (jobs, child machines, timers) carries the W3C trace context
 * of the step that caused it ({@link TraceCarrier}, persisted with the job or the instance row),
 * and the span that runs it later is a child of that context: one trace per business event, even
 * when its job runs hours later in another process.
 */
import type {
  Attributes,
  Context,
  Link,
  Span,
  SpanKind as SpanKindValue,
  SpanOptions,
  TextMapGetter,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api';
import { currentOtel, otel } from './otel-api.js';
import type { TraceCarrier } from './trace-carrier.js';

// The per-event functions below take the API from `currentOtel()` once per call (no forwarding
// function per API call); `otel` (the forwarders) serves what runs once.
const { INVALID_SPAN_CONTEXT } = otel;
/** The API's span kinds (its enum's values). */
export const SpanKind = otel.SpanKind;
export type SpanKind = SpanKindValue;
/** The API's span status codes (its enum's values). */
export const SpanStatusCode = otel.SpanStatusCode;

/** The instrumentation scope of every span and instrument of the package. */
export const INSTRUMENTATION_SCOPE = 'machine-routes';

export type { TraceCarrier };

let cached: { provider: TracerProvider; tracer: Tracer; sdk: boolean } | undefined;

/** The span of a process without an SDK: non-recording, shared (it holds nothing). */
const NOT_RECORDING = otel.trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * The tracer of the package, for the tracer provider registered now. The API's proxy provider
 * stays the global one and hands out the SDK's tracer once an SDK is registered; asking it on
 * every span cost a lookup (and, without an SDK, a proxy tracer object), so the tracer is kept
 * while the provider behind the proxy is the same.
 */
export function tracer(): Tracer {
  const { trace } = currentOtel();
  const global = trace.getTracerProvider();
  const provider = (global as { getDelegate?: () => TracerProvider }).getDelegate?.() ?? global;
  if (cached?.provider !== provider) {
    const found = trace.getTracer(INSTRUMENTATION_SCOPE);
    // The proxy hands out a ProxyTracer only while no SDK's provider is behind it.
    cached = { provider, tracer: found, sdk: !(found instanceof otel.ProxyTracer) };
  }
  return cached.tracer;
}

/**
 * Whether spans record at all: an SDK's tracer provider is registered. Without one a request's
 * span, its parent context and its `traceparent` are not looked at (reading the headers made
 * every request copy them).
 */
export function tracesRecorded(): boolean {
  tracer();
  return cached!.sdk;
}

/** The active span when it records (an SDK is registered and sampled it), else undefined. */
export function recordingActiveSpan(): Span | undefined {
  const { context, trace } = currentOtel();
  const span = trace.getSpan(context.active());
  return span?.isRecording() === true ? span : undefined;
}

/**
 * The attributes a recording span holds so far when its SDK shows them (the SDK's spans are
 * `ReadableSpan`s), else undefined: a caller can leave out one it would set again unchanged.
 */
export function heldAttributes(span: Span): Readonly<Attributes> | undefined {
  const held = (span as { attributes?: unknown }).attributes;
  return typeof held === 'object' && held !== null ? (held as Attributes) : undefined;
}

/**
 * Parts of a step (bits) that recording spans host, for the spans claimed last: a ring of
 * {@link RECENT} slots searched by identity. A request's step and its commit claim in different
 * turns when requests interleave (2 of 3 bound requests at 4 connections did), so one slot (the
 * earlier way) sent most requests through the WeakMap: an insertion, a lookup and an ephemeron
 * for young-generation collections to scan, per request. A span leaves the ring when its slot is
 * taken again; only one still recording with parts claimed goes to the WeakMap then (more
 * concurrent steps than slots), and the WeakMap is looked in only once something went there.
 * An ended span hosts nothing again, so what it claimed may be forgotten.
 */
const RECENT = 32;
const recentSpans: (Span | undefined)[] = new Array<Span | undefined>(RECENT).fill(undefined);
const recentParts = new Uint8Array(RECENT);
let nextSlot = 0;
const overflow = new WeakMap<Span, number>();
let overflowed = false;

/** Claims `part` (a bit) of a recording span: true when no one claimed it on this span before. */
export function claimSpanPart(span: Span, part: number): boolean {
  for (let slot = 0; slot < RECENT; slot += 1) {
    if (recentSpans[slot] !== span) continue;
    const parts = recentParts[slot]!;
    recentParts[slot] = parts | part;
    return (parts & part) === 0;
  }
  const parts = overflowed ? (overflow.get(span) ?? 0) : 0;
  const evicted = recentSpans[nextSlot];
  if (evicted !== undefined && recentParts[nextSlot] !== 0 && evicted.isRecording()) {
    overflow.set(evicted, recentParts[nextSlot]!);
    overflowed = true;
  }
  recentSpans[nextSlot] = span;
  recentParts[nextSlot] = parts | part;
  nextSlot = (nextSlot + 1) % RECENT;
  return (parts & part) === 0;
}

/** The active context (framework instrumentation's or ours). */
export function activeContext(): Context {
  return currentOtel().context.active();
}

/** True when `parent` holds a span (framework instrumentation made a server span). */
export function hasSpan(parent: Context): boolean {
  return currentOtel().trace.getSpan(parent) !== undefined;
}

/** Calls `fn(arg)` with `span` active on top of `parent`. */
export function callInSpan<A, T>(parent: Context, span: Span, fn: (arg: A) => T, arg: A): T {
  const { context, trace } = currentOtel();
  return context.with(trace.setSpan(parent, span), fn, undefined, arg);
}

/** Options of {@link startSpan}. */
export interface StartSpanOptions {
  kind?: SpanKind;
  /** The parent: a stored carrier (work caused by an earlier step), else the active context. */
  parent?: TraceCarrier | Context | null;
  /**
   * Attributes: an object made once and shared (a route's), or a function building them only
   * when the span records (an SDK is registered and samples it).
   */
  attributes?: Attributes | (() => Attributes);
  /** Stored carriers of earlier steps this span follows from (span links, not parents). */
  links?: readonly (TraceCarrier | null | undefined)[];
}

/**
 * Starts a span named `name`. Attributes are computed only for a recording span; a process
 * without an SDK gets one shared non-recording span and builds nothing.
 */
export function startSpan(name: string, options: StartSpanOptions = {}): Span {
  const spanTracer = tracer();
  if (!cached!.sdk) return NOT_RECORDING;
  const parent = parentContext(options.parent);
  let spanOptions = KIND_OPTIONS[options.kind ?? otel.SpanKind.INTERNAL];
  if (options.links !== undefined) {
    const links = linksOf(options.links);
    if (links.length > 0) spanOptions = { ...spanOptions, links };
  }
  const span = spanTracer.startSpan(name, spanOptions, parent);
  const attributes = options.attributes;
  if (attributes !== undefined && span.isRecording())
    span.setAttributes(typeof attributes === 'function' ? attributes() : attributes);
  return span;
}

/**
 * Runs `fn` inside a new span (active for what `fn` starts), ending it when `fn` returns or its
 * promise settles. A thrown error or rejection is recorded on the span and rethrown.
 */
export function inSpan<T>(name: string, options: StartSpanOptions, fn: (span: Span) => T): T {
  const span = startSpan(name, options);
  if (!span.isRecording()) return fn(span);
  const { context, trace } = currentOtel();
  const active = trace.setSpan(parentContext(options.parent), span);
  let result: T;
  try {
    result = context.with(active, fn, undefined, span);
  } catch (error) {
    failSpan(span, error);
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failSpan(span, error);
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/**
 * Runs `fn` with `span` active (so spans `fn` starts are its children); a non-recording span
 * changes nothing, and `fn` runs as a plain call.
 */
export function withActiveSpan<T>(span: Span, fn: () => T): T {
  if (!span.isRecording()) return fn();
  const { context, trace } = currentOtel();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Marks a span failed with `error` (recorded as an exception event). */
export function failSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  if (error instanceof Error) span.recordException(error);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/**
 * The trace context active now, serialized by the global propagator; `undefined` when there is
 * none to keep (no SDK, or no sampled span), so nothing is stored for it.
 */
export function currentTraceCarrier(): TraceCarrier | undefined {
  const { context, propagation, trace } = currentOtel();
  const active = context.active();
  if (!trace.getSpan(active)?.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  return Object.keys(carrier).length === 0 ? undefined : carrier;
}

/**
 * A request's headers as the propagator reads them: one header by lower-cased name without
 * copying them all when the request can (`header`), else the copy (`headers`).
 */
export interface HeaderSource {
  readonly headers: Readonly<Record<string, string | undefined>>;
  header?(name: string): string | undefined;
}

/** The trace context a request's headers carry (`traceparent`), for a span without a parent. */
export function contextFromHeaders(request: HeaderSource): Context {
  const api = currentOtel();
  return api.propagation.extract(api.ROOT_CONTEXT, request, HEADER_GETTER);
}

/**
 * The trace id of a request's log lines: the active span's (an SDK is registered), else the one
 * its `traceparent` header names, so the client's trace is findable without an SDK too.
 */
export function traceIdOf(
  headers: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const { context, trace } = currentOtel();
  const span = trace.getSpan(context.active());
  if (span?.isRecording()) return span.spanContext().traceId;
  const traceparent = headers['traceparent'];
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  return match === null || match[1] === INVALID_TRACE_ID ? undefined : match[1];
}

/** version-traceid-parentid-flags (W3C Trace Context). */
const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;
const INVALID_TRACE_ID = '0'.repeat(32);

/** The tracer's options of a span without links, one shared object per kind (never changed). */
const KIND_OPTIONS: Readonly<Record<SpanKind, SpanOptions>> = Object.freeze({
  [otel.SpanKind.INTERNAL]: Object.freeze({ kind: otel.SpanKind.INTERNAL }),
  [otel.SpanKind.SERVER]: Object.freeze({ kind: otel.SpanKind.SERVER }),
  [otel.SpanKind.CLIENT]: Object.freeze({ kind: otel.SpanKind.CLIENT }),
  [otel.SpanKind.PRODUCER]: Object.freeze({ kind: otel.SpanKind.PRODUCER }),
  [otel.SpanKind.CONSUMER]: Object.freeze({ kind: otel.SpanKind.CONSUMER }),
});

function parentContext(parent: TraceCarrier | Context | null | undefined): Context {
  if (parent === undefined || parent === null) return currentOtel().context.active();
  if (isContext(parent)) return parent;
  return otel.propagation.extract(otel.ROOT_CONTEXT, parent);
}

function linksOf(carriers: StartSpanOptions['links']): Link[] {
  const links: Link[] = [];
  for (const carrier of carriers ?? []) {
    if (carrier === null || carrier === undefined) continue;
    const linked = otel.trace.getSpanContext(otel.propagation.extract(otel.ROOT_CONTEXT, carrier));
    if (linked !== undefined && otel.isSpanContextValid(linked)) links.push({ context: linked });
  }
  return links;
}

/**
 * Adds a span link from `span` to the span a stored carrier names (a step of an earlier trace
 * this work follows from); nothing for a non-recording span or an empty carrier.
 */
export function addCarrierLink(span: Span, carrier: TraceCarrier | null | undefined): void {
  if (!span.isRecording()) return;
  const [link] = linksOf([carrier]);
  if (link !== undefined) span.addLink(link);
}

function isContext(value: TraceCarrier | Context): value is Context {
  return typeof (value as Context).getValue === 'function';
}

// The W3C propagator reads two headers by name: the request's copy of every header (made on
// first read of `headers`) was a visible share of what the SDK cost a request.
const HEADER_GETTER: TextMapGetter<HeaderSource> = {
  keys: (request) => Object.keys(request.headers),
  get: (request, key) => {
    const name = key.toLowerCase();
    return request.header === undefined ? request.headers[name] : request.header(name);
  },
};

export type { Attributes, Context, Span };
