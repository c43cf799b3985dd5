/**
 * Prints plain data as a one-line TypeScript literal in the style prettier gives the rest of
 * a generated file (single quotes, unquoted identifier keys, `{ a: 1 }` spacing). Large data
 * tables are emitted this way under `// prettier-ignore`: they are canonical already, and
 * running them through prettier was most of the time `generate` took on large APIs.
 */
import { compareCodeUnits } from './naming.js';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A single-quoted string literal (JSON escapes, which are valid JavaScript escapes). */
export function quoteString(text: string): string {
  const json = JSON.stringify(text).slice(1, -1);
  return `'${json.replaceAll('\\"', '"').replaceAll("'", "\\'")}'`;
}

function printKey(key: string): string {
  return IDENTIFIER.test(key) ? key : quoteString(key);
}

/**
 * Object keys in print order: those of `first` that are present, in that order, then the others
 * by code units, so the output never depends on how the object was built.
 */
function orderedKeys(value: object, first: readonly string[]): string[] {
  const keys = Object.keys(value);
  const rest = keys.filter((key) => !first.includes(key)).sort(compareCodeUnits);
  return [...first.filter((key) => keys.includes(key)), ...rest];
}

/**
 * One-line literal of a JSON value. `keyOrder` lists the keys printed first in the top-level
 * object; nested objects print `kind` (a discriminant) first, then sorted keys.
 */
export function printLiteral(value: unknown, keyOrder: readonly string[] = ['kind']): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') {
    return String(value);
  }
  if (typeof value === 'string') return quoteString(value);
  if (Array.isArray(value)) return `[${value.map((item) => printLiteral(item)).join(', ')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const entries = orderedKeys(record, keyOrder)
      .filter((key) => record[key] !== undefined)
      .map((key) => `${printKey(key)}: ${printLiteral(record[key])}`);
    return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
  }
  throw new Error(`Cannot print ${typeof value} as a literal: generated data must be JSON.`);
}
