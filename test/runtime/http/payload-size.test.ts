/**
 * `assertPayloadSize` skips serialising payloads whose size bound is under the limit: the 413
 * must still come exactly when the serialised payload is over the limit.
 */
import { describe, expect, it } from 'vitest';
import { assertPayloadSize } from '../../../src/runtime/http/request-data.js';

function refused(payload: unknown, limit: number): boolean {
  try {
    assertPayloadSize(payload, 'EVENT', limit);
    return false;
  } catch (error) {
    expect((error as { status?: number }).status).toBe(413);
    return true;
  }
}

const exactSize = (payload: unknown) => Buffer.byteLength(JSON.stringify(payload) ?? '');

const payloads: unknown[] = [
  { by: 1 },
  // Numbers that serialise longer than they were written.
  JSON.parse('{"list":[1e20,-1e20,1e-7,0.0000012345678901234567,-1.7976931348623157e308]}'),
  { text: '\u0000\u001f\u2028 é 😀 \ud800 "quoted" \\' },
  { nested: { deeper: [[], {}, [null, true, false], { a: undefined, b: 'x' }] } },
  ['sparse', , 'array'],
  { date: new Date(0), map: new Map([[1, 2]]) },
  { toJSON: () => 'x'.repeat(50) },
  Object.assign(Object.create(null) as object, { key: 'value' }),
  'a plain string',
  12345.678,
  null,
];

describe('assertPayloadSize', () => {
  it.each(payloads.map((payload) => [JSON.stringify(payload), payload]))(
    'should refuse %s exactly when its JSON is over the limit',
    (_name, payload) => {
      const size = exactSize(payload);
      for (const limit of [0, 1, size - 1, size, size + 1, size * 10])
        expect(refused(payload, Math.max(limit, 0))).toBe(size > limit);
    },
  );

  it('should accept no payload at all', () => {
    expect(refused(undefined, 0)).toBe(false);
  });
});
