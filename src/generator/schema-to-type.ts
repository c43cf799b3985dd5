/**
 * Prints a TypeScript type for a JSON Schema. Covers what `z.toJSONSchema` and the envelope
 * schemas produce (objects, arrays, tuples, enums, consts, unions, intersections, `$ref` to
 * components); anything else becomes `unknown`, which is always a safe reading.
 *
 * Written here rather than calling json-schema-to-typescript per schema: that library
 * dereferences and prettier-formats every schema on its own, while here the component
 * references must stay names (they are emitted once) and the whole file is formatted once, or
 * not at all when every declaration fits on its line.
 */
import type { JsonSchema, JsonValue } from './manifest.js';
import { quoteString } from './ts-literal.js';

/** Turns `#/components/schemas/<Name>` into the name of the type emitted for it. */
export type RefResolver = (ref: string) => string;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function isSchema(value: JsonValue | undefined): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function literal(value: JsonValue): string {
  if (typeof value === 'string') return quoteString(value);
  return typeof value === 'object' && value !== null ? 'unknown' : JSON.stringify(value);
}

function union(types: string[]): string {
  const unique = [...new Set(types)];
  if (unique.length === 0) return 'never';
  return unique.length === 1
    ? unique[0]!
    : unique.map((type) => (type.includes('=>') ? `(${type})` : type)).join(' | ');
}

function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : quoteString(name);
}

function objectType(schema: JsonSchema, resolve: RefResolver): string {
  const properties = isSchema(schema['properties']) ? schema['properties'] : {};
  const required = new Set(Array.isArray(schema['required']) ? schema['required'].map(String) : []);
  const members = Object.entries(properties).map(([name, property]) => {
    const type = isSchema(property) ? schemaToType(property, resolve) : 'unknown';
    return `${propertyKey(name)}${required.has(name) ? '' : '?'}: ${type}`;
  });
  const additional = schema['additionalProperties'];
  if (isSchema(additional)) {
    members.push(`[key: string]: ${schemaToType(additional, resolve)}`);
  } else if (additional !== false && members.length === 0) {
    return 'Record<string, unknown>';
  }
  return members.length === 0 ? 'Record<string, never>' : `{ ${members.join('; ')} }`;
}

function typeOfName(name: string, schema: JsonSchema, resolve: RefResolver): string {
  switch (name) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      if (Array.isArray(schema['prefixItems'])) {
        const items = schema['prefixItems'].map((item) =>
          isSchema(item) ? schemaToType(item, resolve) : 'unknown',
        );
        return `[${items.join(', ')}]`;
      }
      const items = schema['items'];
      const item = isSchema(items) ? schemaToType(items, resolve) : 'unknown';
      return /[|&\s]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case 'object':
      return objectType(schema, resolve);
    default:
      return 'unknown';
  }
}

/**
 * The TypeScript type of `schema`, on one line, in the layout prettier gives a type that fits
 * on one (single quotes, `{ a: T; b?: U }`): a declaration of it that fits the print width
 * needs no formatting (see `flat-layout.ts`); a longer one is laid out by prettier.
 */
export function schemaToType(schema: JsonSchema, resolve: RefResolver): string {
  if (typeof schema['$ref'] === 'string') return resolve(schema['$ref']);
  if ('const' in schema) return literal(schema['const']!);
  if (Array.isArray(schema['enum'])) return union(schema['enum'].map(literal));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options))
      return union(
        options.map((option) => (isSchema(option) ? schemaToType(option, resolve) : 'unknown')),
      );
  }
  if (Array.isArray(schema['allOf'])) {
    const parts = schema['allOf'].map((part) =>
      isSchema(part) ? schemaToType(part, resolve) : 'unknown',
    );
    return parts.map((part) => (part.includes('|') ? `(${part})` : part)).join(' & ');
  }
  const type = schema['type'];
  if (Array.isArray(type))
    return union(type.map((name) => typeOfName(String(name), schema, resolve)));
  if (typeof type === 'string') return typeOfName(type, schema, resolve);
  if (isSchema(schema['properties'])) return objectType(schema, resolve);
  return 'unknown';
}
