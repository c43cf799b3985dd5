/**
 * An example value of a JSON Schema (as `z.toJSONSchema` writes one), for the payloads the
 * generator runs through the machine and documents. The schema's own example wins (`examples`,
 * e.g. from zod's `.meta({ examples: [...] })`, then `default`, `const`, the first `enum`
 * value); otherwise the smallest value the keywords allow: a number at its minimum (1 without
 * one), a string of its format or `minLength`, one array item, an object's required properties.
 * Deterministic. Throws when the schema asks for something it cannot build (a `$ref`, a
 * `pattern`, `not`): the caller then has no example. The result is checked by the real schema
 * before it is used.
 */
import type { JsonSchema, JsonValue } from './manifest.js';

/** Strings of a `format`. */
const FORMATS: Readonly<Record<string, string>> = {
  'date-time': '2025-01-01T00:00:00.000Z',
  date: '2025-01-01',
  time: '00:00:00',
  duration: 'P1D',
  email: 'user@example.com',
  uri: 'https://example.com',
  url: 'https://example.com',
  uuid: '00000000-0000-4000-8000-000000000000',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
};

class NoExample extends Error {}

/** An example of `schema`. Throws when none can be built from its keywords. */
export function examplePayload(schema: JsonSchema): JsonValue {
  return sample(schema, 0);
}

function sample(schema: JsonSchema, depth: number): JsonValue {
  if (depth > 20) throw new NoExample('too deep');
  const examples = schema['examples'];
  if (Array.isArray(examples) && examples.length > 0) return examples[0]!;
  if (schema['default'] !== undefined) return schema['default'];
  if (schema['const'] !== undefined) return schema['const'];
  const values = schema['enum'];
  if (Array.isArray(values) && values.length > 0) return values[0]!;
  if ('$ref' in schema || 'not' in schema) throw new NoExample('unsupported keyword');
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) {
      // The first option that is not null: a nullable field shows its value.
      const option = options.find((candidate) => !isNullSchema(candidate)) ?? options[0];
      if (option === undefined) throw new NoExample('empty union');
      return sample(option as JsonSchema, depth + 1);
    }
  }
  const allOf = schema['allOf'];
  if (Array.isArray(allOf)) {
    const merged = allOf.reduce<JsonSchema>(
      (all, part) => ({ ...all, ...(part as JsonSchema) }),
      {},
    );
    return sample(merged, depth + 1);
  }
  const type = Array.isArray(schema['type'])
    ? ((schema['type'] as JsonValue[]).find((candidate) => candidate !== 'null') ?? 'null')
    : schema['type'];
  switch (type) {
    case 'object':
      return objectExample(schema, depth);
    case 'array':
      return arrayExample(schema, depth);
    case 'string':
      return stringExample(schema);
    case 'integer':
    case 'number':
      return numberExample(schema, type === 'integer');
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      // No type: any value; an object when it lists properties.
      if (schema['properties'] !== undefined) return objectExample(schema, depth);
      throw new NoExample('no type');
  }
}

function isNullSchema(schema: JsonValue): boolean {
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema)
    ? schema['type'] === 'null'
    : false;
}

function objectExample(schema: JsonSchema, depth: number): JsonValue {
  const properties = (schema['properties'] ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema['required'] ?? []) as string[]);
  const result: { [key: string]: JsonValue } = {};
  for (const [key, property] of Object.entries(properties)) {
    // Optional properties only when the schema gives their example: no invented notes.
    const shown =
      required.has(key) || property['examples'] !== undefined || property['default'] !== undefined;
    if (shown) result[key] = sample(property, depth + 1);
  }
  return result;
}

function arrayExample(schema: JsonSchema, depth: number): JsonValue {
  const items = schema['items'];
  if (typeof items !== 'object' || items === null || Array.isArray(items)) {
    throw new NoExample('array without one item schema');
  }
  const min = typeof schema['minItems'] === 'number' ? schema['minItems'] : 0;
  const max = typeof schema['maxItems'] === 'number' ? schema['maxItems'] : Infinity;
  // One item shows what an item looks like; more only when the schema asks for them.
  const count = Math.min(Math.max(min, 1), max);
  return Array.from({ length: count }, () => sample(items as JsonSchema, depth + 1));
}

function stringExample(schema: JsonSchema): JsonValue {
  // A known format first: zod writes a pattern beside it, which the format's value matches.
  const format = schema['format'];
  if (typeof format === 'string') {
    const value = FORMATS[format];
    if (value === undefined) throw new NoExample(`format ${format}`);
    return value;
  }
  if (schema['pattern'] !== undefined) throw new NoExample('pattern');
  const min = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0;
  const max = typeof schema['maxLength'] === 'number' ? schema['maxLength'] : Infinity;
  const text = 'string'.padEnd(min, 'x');
  return text.slice(0, Math.max(min, Math.min(text.length, max)));
}

function numberExample(schema: JsonSchema, integer: boolean): JsonValue {
  const num = (key: string): number | undefined =>
    typeof schema[key] === 'number' ? (schema[key] as number) : undefined;
  // 1 past an exclusive bound: a round number for integers and decimals alike.
  const step = 1;
  const exclusiveMin = num('exclusiveMinimum');
  const exclusiveMax = num('exclusiveMaximum');
  const low = num('minimum') ?? (exclusiveMin === undefined ? undefined : exclusiveMin + step);
  const high = num('maximum') ?? (exclusiveMax === undefined ? undefined : exclusiveMax - step);
  let value = low ?? (high !== undefined && high < 1 ? high : 1);
  if (integer) value = Math.ceil(value);
  const multiple = num('multipleOf');
  if (multiple !== undefined) value = Math.ceil(value / multiple) * multiple;
  return value;
}
