/**
 * Naming and ordering helpers shared by the emitters. Ordering uses code units, never
 * `localeCompare`, so output does not depend on the machine's locale.
 */

/** Code-unit comparison of two strings (what `Array.prototype.sort` does by default). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts a copy of `items` by the code units of `key(item)`. */
export function sortBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => compareCodeUnits(key(a), key(b)));
}

export { camelCase, pascalCase } from '../runtime/naming.js';
