/**
 * The query-string parser of the HTTP layer (src/runtime/http/nested-query.ts) against qs 6.17,
 * the library it replaces (a devDependency now), called as the layer called it: on generated
 * query strings made of the pieces qs treats specially (brackets, indices around the array
 * limit, repeated keys, prototype names, `%5B`, `+`, malformed escapes), both give the same
 * value or throw the same message. test/runtime/http/request-parsing.test.ts keeps the layer's
 * own cases (400s, depth 32, prototype keys).
 */
import fc from 'fast-check';
import qs from 'qs';
import { describe, expect, it } from 'vitest';
import { parseNestedQuery } from '../../../src/runtime/http/nested-query.js';

const DEPTH = 4;
const PARAMETERS = 12;

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new Error('Malformed query string.');
  }
}

type Outcome = { value: unknown } | { error: string };

function outcome(parse: () => unknown): Outcome {
  try {
    return { value: parse() };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const ours = (query: string) =>
  outcome(() => parseNestedQuery(query, decode, { depth: DEPTH, parameters: PARAMETERS }));
const theirs = (query: string) =>
  outcome(() =>
    qs.parse(query, {
      ignoreQueryPrefix: true,
      depth: DEPTH,
      strictDepth: true,
      parameterLimit: PARAMETERS,
      throwOnLimitExceeded: true,
      allowPrototypes: false,
      decoder: decode,
    }),
  );

const NAMES = [
  'a',
  'b',
  'x',
  '0',
  '1',
  '2',
  '19',
  '20',
  '21',
  '007',
  '-1',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '',
];
const KEY_PIECES = [
  ...NAMES,
  ...NAMES.map((name) => `[${name}]`),
  '[]',
  '[',
  ']',
  '%5B',
  '%5d',
  '[[]]',
  '.',
  '+',
  '%20',
];
const VALUES = ['', '1', 'x', 'a+b', '%21', '%E0%A4%A', '%', '=', '[]', ']=', 'toString'];

const key = fc
  .array(fc.constantFrom(...KEY_PIECES), { minLength: 0, maxLength: 6 })
  .map((p) => p.join(''));
const pair = fc.oneof(
  fc.tuple(key, fc.constantFrom(...VALUES)).map(([k, v]) => `${k}=${v}`),
  key,
);
const query = fc
  .tuple(fc.boolean(), fc.array(pair, { minLength: 0, maxLength: 14 }))
  .map(([prefix, pairs]) => `${prefix ? '?' : ''}${pairs.join('&')}`);

describe('parseNestedQuery', () => {
  it.each([
    'a=1&a=2',
    'a[]=1&a[]=2&a=3',
    'a[b]=1&a=2&a=3',
    'a=2&a[b]=1',
    'a[1]=x&a[0]=y',
    'a[5]=x',
    'a[20]=x',
    'a[19]=x&a[]=y',
    'a[0][b]=1&a[0][c]=2&a[1]=3',
    'a[b]=1&a[0]=2',
    'a[b]=1&a=2&a[c]=3&[a]=4&[a][]=5',
    'a[0]=1&a=2&a[x]=3&[a]=4',
    '[]=1&[0]=2',
    'a[b=c',
    'a[[b]]=1',
    `${'a=1&'.repeat(20)}a=1`,
    `${'a=1&'.repeat(21)}a=1`,
    'a[b][c][d][e]=1',
    'a[b][c][d][e][f]=1',
    '__proto__[x]=1&a[constructor]=2&b[toString][c]=3',
    'a=%E0%A4%A',
  ])('should parse %j as qs does', (text) => {
    expect(ours(text)).toStrictEqual(theirs(text));
  });

  it('should give what qs gives on generated query strings', () => {
    fc.assert(
      fc.property(query, (text) => {
        expect(ours(text)).toStrictEqual(theirs(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('should give what qs gives on many repeats of one key and deep arrays', () => {
    const repeated = fc
      .array(fc.constantFrom('a=1', 'a[]=2', 'a[0]=3', 'a[b]=4', 'a[19]=5', 'a[0][]=6'), {
        minLength: 15,
        maxLength: 12 + PARAMETERS,
      })
      .map((pairs) => pairs.join('&'));
    fc.assert(
      fc.property(repeated, (text) => {
        const big = (t: string) =>
          outcome(() => parseNestedQuery(t, decode, { depth: DEPTH, parameters: 100 }));
        const reference = (t: string) =>
          outcome(() =>
            qs.parse(t, {
              ignoreQueryPrefix: true,
              depth: DEPTH,
              strictDepth: true,
              parameterLimit: 100,
              throwOnLimitExceeded: true,
              allowPrototypes: false,
              decoder: decode,
            }),
          );
        expect(big(text)).toStrictEqual(reference(text));
      }),
      { numRuns: 2000 },
    );
  });
});
