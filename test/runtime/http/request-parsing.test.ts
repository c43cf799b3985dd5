import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMiddlewareName } from '../../../src/runtime/http/middleware-registry.js';
import { HttpError } from '../../../src/runtime/http/response-bodies.js';
import {
  isJsonContentType,
  parseJsonBody,
  parseQueryString,
} from '../../../src/runtime/http/request-parsing.js';
import {
  validatePayload,
  validationErrorBody,
} from '../../../src/runtime/http/validation-errors.js';
import { modelParamName, normalizePrefix } from '../../../src/runtime/definition/uri.js';

describe('parseQueryString', () => {
  it.each<[string, Record<string, unknown>]>([
    ['', {}],
    ['a=1&b=two', { a: '1', b: 'two' }],
    ['a=1&a=2', { a: ['1', '2'] }],
    ['items[]=a&items[]=b', { items: ['a', 'b'] }],
    ['payload[code]=7&payload[tags][]=x', { payload: { code: '7', tags: ['x'] } }],
    ['q=hello+world%21&empty=', { q: 'hello world!', empty: '' }],
    ['__proto__[polluted]=1&constructor[prototype][x]=1&ok=1', { ok: '1' }],
  ])('should parse %j', (query, expected) => {
    expect(parseQueryString(query)).toEqual(expected);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['nested 2,000 deep', `a${'[b]'.repeat(2000)}=1`],
    ['nested 33 deep', `a${'[b]'.repeat(33)}=1`],
    ['with more than 1,000 pairs', Array.from({ length: 1001 }, (_, i) => `k${i}=1`).join('&')],
  ])('should reject a query string %s with 400', (_name, query) => {
    expect(() => parseQueryString(query)).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('should accept a query string nested 32 deep', () => {
    expect(parseQueryString(`a${'[b]'.repeat(31)}=1`)).toHaveProperty('a.b.b');
  });

  it('should reject malformed percent-encoding with 400', () => {
    expect(() => parseQueryString('a=%E0%A4%A')).toThrow(HttpError);
  });
});

describe('parseJsonBody', () => {
  it.each<[string, unknown]>([
    ['', undefined],
    ['{"payload":{"a":1}}', { payload: { a: 1 } }],
    ['{"a":{"__proto__":{"x":1},"b":2}}', { a: { b: 2 } }],
    ['{"constructor":{"prototype":{"x":1}},"c":"constructor"}', { c: 'constructor' }],
    ['{"constructor":"kept"}', { constructor: 'kept' }],
  ])('should parse %s', (text, expected) => {
    expect(parseJsonBody(text)).toEqual(expected);
  });

  it.each([
    ['a 10,000-deep array', `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
    ['a 10,000-deep object', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
    ['a 33-deep object', `${'{"a":'.repeat(33)}1${'}'.repeat(33)}`],
  ])('should answer %s with a 400 HttpError', (_name, text) => {
    expect(() => parseJsonBody(text)).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('should accept JSON nested 32 deep, and brackets inside strings', () => {
    expect(parseJsonBody(`${'{"a":'.repeat(32)}1${'}'.repeat(32)}`)).toHaveProperty('a.a.a');
    expect(parseJsonBody(`{"s":"${'['.repeat(100)}"}`)).toEqual({ s: '['.repeat(100) });
  });

  it('should check the nesting of the shortest texts at and over the limit', () => {
    // 32 deep is 64 characters, too short to be over the limit; 33 deep is 66, the first length
    // that is scanned.
    expect(parseJsonBody(`${'['.repeat(32)}${']'.repeat(32)}`)).toBeInstanceOf(Array);
    expect(() => parseJsonBody(`${'['.repeat(33)}${']'.repeat(33)}`)).toThrow(
      expect.objectContaining({ status: 400 }),
    );
    expect(() => parseJsonBody(` ${'['.repeat(33)}${']'.repeat(33)} `)).toThrow(
      expect.objectContaining({ status: 400 }),
    );
  });

  it.each<[string, unknown]>([
    [' \n\t ', undefined],
    [' {"a":1}', { a: 1 }],
    ['\n[1]\n', [1]],
    ['"text"', 'text'],
  ])(
    'should treat blank text as no body and parse text around whitespace: %j',
    (text, expected) => {
      expect(parseJsonBody(text)).toEqual(expected);
    },
  );

  it('should answer malformed JSON with a 400 HttpError', () => {
    expect(() => parseJsonBody('{"a":')).toThrow(expect.objectContaining({ status: 400 }));
  });

  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['application/merge-patch+json', true],
    ['text/plain', false],
    [undefined, false],
  ])('should tell whether %s is JSON', (type, expected) => {
    expect(isJsonContentType(type)).toBe(expected);
  });
});

describe('validatePayload', () => {
  const schema = z.object({
    n: z.number().int(),
    b: z.boolean().optional(),
    list: z.array(z.number()).optional(),
    nested: z.object({ at: z.number() }).optional(),
  });

  it('should coerce query strings where the schema asks for other types', async () => {
    expect(
      await validatePayload(
        schema,
        { n: '3', b: 'false', list: '4', nested: { at: '1.5' } },
        { coerce: true },
      ),
    ).toEqual({ ok: true, payload: { n: 3, b: false, list: [4], nested: { at: 1.5 } } });
  });

  it('should not coerce bodies', async () => {
    expect(await validatePayload(schema, { n: '3' }, { coerce: false })).toEqual({
      ok: false,
      errors: { 'payload.n': ['Invalid input: expected number, received string'] },
    });
  });

  it('should accept any object without a schema and reject other payloads', async () => {
    expect(await validatePayload(undefined, { a: 1 }, { coerce: false })).toEqual({
      ok: true,
      payload: { a: 1 },
    });
    expect(await validatePayload(undefined, 'x', { coerce: false })).toEqual({
      ok: false,
      errors: { payload: ['The payload must be an object.'] },
    });
  });

  it.each<[Record<string, string[]>, string]>([
    [{ 'payload.a': ['A is required.'] }, 'A is required.'],
    [{ 'payload.a': ['A is required.', 'A is short.'] }, 'A is required. (and 1 more error)'],
    [{ 'payload.a': ['A.'], 'payload.b': ['B.'], 'payload.c': ['C.'] }, 'A. (and 2 more errors)'],
  ])('should summarize %j as %s', (errors, message) => {
    expect(validationErrorBody(errors)).toEqual({ message, errors });
  });
});

describe('names', () => {
  it.each([
    ['auth', { name: 'auth', args: [] }],
    ['auth:admin', { name: 'auth', args: ['admin'] }],
    ['throttle:60, 1', { name: 'throttle', args: ['60', '1'] }],
  ])('should parse middleware %s', (name, expected) => {
    expect(parseMiddlewareName(name)).toEqual(expected);
  });

  it.each([
    ['Order', 'order'],
    ['SalesOrder', 'salesOrder'],
    ['line_item', 'lineItem'],
    ['line-item', 'lineItem'],
  ])('should turn model %s into the route parameter %s', (model, param) => {
    expect(modelParamName(model)).toBe(param);
  });

  it.each<[unknown, string | null]>([
    ['orders', '/orders'],
    ['/api/orders/', '/api/orders'],
    ['', null],
    ['/', null],
    ['a b', null],
    ['orders/{id}', null],
    ['a//b', null],
    [undefined, null],
  ])('should normalize the prefix %j to %j', (prefix, expected) => {
    expect(normalizePrefix(prefix)).toBe(expected);
  });
});
