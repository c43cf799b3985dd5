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

function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word.length > 0)
    .map((word) => word.toLowerCase());
}

/** `order_admin`, `order.admin`, `ORDER_ADMIN` -> `OrderAdmin`. */
export function pascalCase(text: string): string {
  const result = words(text)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');
  // An identifier cannot start with a digit.
  return /^[0-9]/.test(result) ? `_${result}` : result;
}

/** `order_admin`, `SUBMIT_ORDER` -> `orderAdmin`, `submitOrder`. */
export function camelCase(text: string): string {
  const pascal = pascalCase(text);
  return pascal.startsWith('_') ? pascal : pascal[0]!.toLowerCase() + pascal.slice(1);
}
