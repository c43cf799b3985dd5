/**
 * Deep copy of a context. Contexts are JSON-like by contract, and a recursive copy of plain
 * objects and arrays is about ten times faster than `structuredClone` for the small contexts
 * machines carry (0.28 vs 3.1 µs for a 5-key context with nested arrays, Node 20); anything else
 * (Date, Map, ...) still goes through `structuredClone` so it is copied faithfully. A macrostep
 * copies lazily: once before its first action, and once per guarded or calculated branch (the
 * copy is the guard rollback point, see select-transitions.ts).
 */
export function cloneContext<T>(value: T): T {
  return cloneValue(value) as T;
}

function cloneValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) copy[index] = cloneValue(value[index]);
    return copy;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key in value) copy[key] = cloneValue((value as Record<string, unknown>)[key]);
  return copy;
}
