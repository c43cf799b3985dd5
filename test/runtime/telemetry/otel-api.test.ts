/**
 * The OpenTelemetry API as an optional peer (src/runtime/telemetry/otel-api.ts): the installed
 * package when it resolves, the no-op stand-in when it does not, and any other failure to load
 * it surfaces. The stand-in's enum values are the API's own (they are its contract), and its
 * spans and instruments behave as the API's with no SDK registered. The same runtime without the
 * package installed, serving requests, is the production install of test/package/install.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as api from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { loadOtelApi, NOOP_API, otel } from '../../../src/runtime/telemetry/otel-api.js';

function missing(id: string): Error {
  return Object.assign(new Error(`Cannot find module '${id}'\nRequire stack:\n- here`), {
    code: 'MODULE_NOT_FOUND',
  });
}

/** A TypeScript enum's members by name (without its reverse, value-to-name entries). */
function named(enumeration: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(enumeration).filter(([key]) => !/^\d+$/.test(key)));
}

describe('the OpenTelemetry API loader', () => {
  it('should use the installed package (here a devDependency), whose state is global', () => {
    expect(otel).not.toBe(NOOP_API);
    expect(otel.trace.getTracer('x').startSpan('y').isRecording()).toBe(false);
    // An SDK registered through the application's copy (here the ES module build) is the one
    // the runtime's copy (the CommonJS build, required) sees.
    const provider = { getMeter: () => NOOP_API.metrics.getMeterProvider().getMeter('x') };
    expect(api.metrics.setGlobalMeterProvider(provider)).toBe(true);
    try {
      expect(otel.metrics.getMeterProvider()).toBe(provider);
    } finally {
      api.metrics.disable();
    }
  });

  it('should not load the package until something registers on its global, then use it', () => {
    // A process of its own: this one has the package loaded (the test imports it).
    const fixture = fileURLToPath(new URL('./fixtures/otel-unloaded.ts', import.meta.url));
    const output = execFileSync(
      process.execPath,
      ['--conditions=machine-routes-source', '--import', 'tsx', fixture],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(output.trim().split('\n')).toEqual(['UNLOADED false', 'RECORDING true true']);
  });

  it('should fall back to the no-op API when the package is not installed', () => {
    expect(
      loadOtelApi((id) => {
        throw missing(id);
      }),
    ).toBe(NOOP_API);
  });

  it('should rethrow any other failure to load it (a broken install is not "absent")', () => {
    expect(() =>
      loadOtelApi(() => {
        throw missing('./build/src/index.js');
      }),
    ).toThrow("Cannot find module './build/src/index.js'");
    expect(() =>
      loadOtelApi(() => {
        throw new SyntaxError('Unexpected token');
      }),
    ).toThrow(SyntaxError);
  });

  it("should give the no-op API the package's enum values and no-SDK behaviour", () => {
    expect(NOOP_API.SpanKind).toEqual(named(api.SpanKind));
    expect(NOOP_API.SpanStatusCode).toEqual(named(api.SpanStatusCode));
    expect(NOOP_API.ValueType).toEqual(named(api.ValueType));
    // Its tracer is its ProxyTracer, as the API's is while no SDK is registered.
    expect(NOOP_API.trace.getTracerProvider().getTracer('x')).toBeInstanceOf(NOOP_API.ProxyTracer);
    expect(api.trace.getTracer('x')).toBeInstanceOf(api.ProxyTracer);
    expect(NOOP_API.trace.wrapSpanContext(NOOP_API.INVALID_SPAN_CONTEXT).isRecording()).toBe(false);
    expect(NOOP_API.INVALID_SPAN_CONTEXT).toEqual(api.INVALID_SPAN_CONTEXT);
    const span = NOOP_API.trace.getTracer('machine-routes').startSpan('step');
    expect(span.isRecording()).toBe(false);
    expect(NOOP_API.isSpanContextValid(span.spanContext())).toBe(false);
    expect(api.isSpanContextValid(span.spanContext())).toBe(false);
    const context = NOOP_API.trace.setSpan(NOOP_API.context.active(), span);
    expect(NOOP_API.trace.getSpan(context)).toBeUndefined();
    expect(NOOP_API.context.with(context, (a: number, b: number) => a + b, undefined, 2, 3)).toBe(
      5,
    );
    const carrier: Record<string, string> = {};
    NOOP_API.propagation.inject(context, carrier);
    expect(carrier).toEqual({});
    const meter = NOOP_API.metrics.getMeterProvider().getMeter('machine-routes');
    meter.createCounter('c').add(1);
    meter.createHistogram('h').record(0.5);
    meter.createObservableGauge('g').addCallback(() => undefined);
  });
});
