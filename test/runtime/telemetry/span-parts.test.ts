/**
 * Which parts of a step (its transition, its commit) a recording span hosts
 * (`claimSpanPart`, src/runtime/telemetry/tracing.ts), with the real SDK's spans: each part is
 * hosted once per span, whatever other spans claimed in between, for fewer spans in flight than
 * the recent-span slots and for many more (the spans that leave the slots still recording are
 * remembered elsewhere), and an ended span's parts may be forgotten.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSpanPart, startSpan, type Span } from '../../../src/runtime/telemetry/tracing.js';
import { installTelemetry, type TestTelemetry } from '../../support/telemetry.js';

const TRANSITION = 1;
const COMMIT = 2;

describe('span parts claimed by steps', () => {
  let telemetry: TestTelemetry;
  beforeAll(() => {
    telemetry = installTelemetry();
  });
  afterAll(async () => {
    await telemetry.shutdown();
  });

  it.each([4, 32, 33, 200])(
    'should host each part once per span with %i spans in flight, interleaved',
    (inFlight) => {
      const spans: Span[] = [];
      for (let index = 0; index < inFlight; index += 1) spans.push(startSpan(`request ${index}`));
      // Every span's step first, then every commit, then each again: as requests interleave.
      for (const span of spans) expect(claimSpanPart(span, TRANSITION)).toBe(true);
      for (const span of spans) expect(claimSpanPart(span, COMMIT)).toBe(true);
      for (const span of spans) {
        expect(claimSpanPart(span, TRANSITION)).toBe(false);
        expect(claimSpanPart(span, COMMIT)).toBe(false);
      }
      for (const span of spans) span.end();
    },
  );

  it('should let a span claimed after many others claim only what it has not', () => {
    const first = startSpan('first');
    expect(claimSpanPart(first, TRANSITION)).toBe(true);
    const others = Array.from({ length: 100 }, (_, index) => startSpan(`other ${index}`));
    for (const other of others) claimSpanPart(other, TRANSITION | COMMIT);
    expect(claimSpanPart(first, TRANSITION)).toBe(false);
    expect(claimSpanPart(first, COMMIT)).toBe(true);
    expect(claimSpanPart(first, COMMIT)).toBe(false);
    for (const span of [first, ...others]) span.end();
  });
});
