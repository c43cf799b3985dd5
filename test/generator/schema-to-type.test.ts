import { describe, expect, it } from 'vitest';
import type { JsonSchema } from '../../src/generator/manifest.js';
import { schemaToType } from '../../src/generator/schema-to-type.js';

const resolve = (ref: string) => ref.replace('#/components/schemas/', '');

describe('schemaToType', () => {
  it.each<[string, JsonSchema, string]>([
    ['a string', { type: 'string' }, 'string'],
    ['an integer', { type: 'integer', minimum: 1 }, 'number'],
    ['a nullable type', { type: ['string', 'null'] }, 'string | null'],
    [
      'an enum',
      { type: 'string', enum: ['order.draft', 'order.paid'] },
      "'order.draft' | 'order.paid'",
    ],
    ['a const', { const: 'SUBMIT' }, "'SUBMIT'"],
    ['a reference', { $ref: '#/components/schemas/OrderState' }, 'OrderState'],
    [
      'an array of a union',
      { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } },
      'Array<string | number>',
    ],
    [
      'a tuple',
      { type: 'array', prefixItems: [{ type: 'string' }, { type: 'boolean' }] },
      '[string, boolean]',
    ],
    [
      'an object with optional and quoted keys',
      {
        type: 'object',
        properties: { amount: { type: 'number' }, 'payload.note': { type: 'string' } },
        required: ['amount'],
      },
      "{ amount: number; 'payload.note'?: string }",
    ],
    [
      'a record',
      { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
      '{ [key: string]: string[] }',
    ],
    ['an open object', { type: 'object' }, 'Record<string, unknown>'],
    [
      'a closed empty object',
      { type: 'object', properties: {}, additionalProperties: false },
      'Record<string, never>',
    ],
    [
      'an intersection',
      { allOf: [{ $ref: '#/components/schemas/A' }, { $ref: '#/components/schemas/B' }] },
      'A & B',
    ],
    ['an empty schema', {}, 'unknown'],
  ])('should print %s', (_name, schema, expected) => {
    expect(schemaToType(schema, resolve)).toBe(expected);
  });
});
