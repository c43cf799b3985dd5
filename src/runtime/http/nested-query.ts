/**
 * The nested query-string parser of both adapters: `qs.parse` (qs 6.17) as the layer called it,
 * `{ ignoreQueryPrefix: true, depth, strictDepth: true, parameterLimit,
 * throwOnLimitExceeded: true, allowPrototypes: false, decoder }`, every other option at qs's
 * default (arrays of at most 20 entries, `combine` for repeated keys, `strictMerge`, no dots,
 * no sparse arrays). qs with its side-channel and get-intrinsic dependencies was 22 packages and
 * 2.2 MB of a production install for this one call; this is its code path for those options,
 * step for step, so the answers are the same: test/runtime/http/nested-query.test.ts compares the
 * two on generated query strings (qs stays a devDependency for that).
 *
 * With `throwOnLimitExceeded`, qs throws wherever it would otherwise turn an array past the
 * limit into an "overflow" object, so no such object is ever made here and that part of qs is
 * left out. Its other marker, a conflict (`a[b]=1&a=2` gives `a: [{ b: '1' }, '2']`, and later
 * conflicts on that path append to it), is kept in a WeakMap as qs keeps it in a side channel.
 */

/** The most entries of one array (qs's `arrayLimit` default). */
const ARRAY_LIMIT = 20;

/** Limits of {@link parseNestedQuery}. */
export interface NestedQueryLimits {
  /** Most bracket groups in one key (`a[b][c]` has 2); more throws. */
  readonly depth: number;
  /** Most `&`-separated parameters; more throws. */
  readonly parameters: number;
}

type Container = Record<string, unknown> | unknown[];

const has = (object: object, key: PropertyKey): boolean =>
  Object.prototype.hasOwnProperty.call(object, key);
const isArray = Array.isArray;
const isContainer = (value: unknown): value is Container =>
  typeof value === 'object' && value !== null;

/** Containers made by a conflict, with the last index used in each (qs's `conflictChannel`). */
const conflicts = new WeakMap<object, number>();

function arrayLimitExceeded(): RangeError {
  return new RangeError(`Array limit exceeded. Only ${ARRAY_LIMIT} elements allowed in an array.`);
}

/**
 * Parses `query` (a leading `?` ignored) into nested objects and arrays of decoded strings.
 * `decode` decodes one key or value (`+` and percent-encoding); what it throws is thrown. Limits
 * exceeded throw a `RangeError` with qs's message.
 */
export function parseNestedQuery(
  query: string,
  decode: (text: string) => string,
  limits: NestedQueryLimits,
): Record<string, unknown> {
  if (query === '') return {};
  const values = parseValues(query, decode, limits.parameters);
  let result: unknown = {};
  for (const key of Object.keys(values)) {
    result = merge(result, parseKey(key, values[key], limits.depth));
  }
  return compact(result) as Record<string, unknown>;
}

/** The flat `key -> value` pairs, repeated keys combined into arrays (qs's `parseValues`). */
function parseValues(
  query: string,
  decode: (text: string) => string,
  limit: number,
): Record<string, unknown> {
  const values: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const clean = query.replace(/^\?/, '').replace(/%5B/gi, '[').replace(/%5D/gi, ']');
  const parts = clean.split('&', limit + 1);
  if (parts.length > limit) {
    throw new RangeError(
      `Parameter limit exceeded. Only ${limit} parameter${limit === 1 ? '' : 's'} allowed.`,
    );
  }
  for (const part of parts) {
    const bracketEquals = part.indexOf(']=');
    const at = bracketEquals === -1 ? part.indexOf('=') : bracketEquals + 1;
    let key: string;
    let value: unknown;
    if (at === -1) {
      key = decode(part);
      value = '';
    } else {
      key = decode(part.slice(0, at));
      const existing = values[key];
      const length = isArray(existing) ? existing.length : 0;
      if (length >= ARRAY_LIMIT && length > 0) throw arrayLimitExceeded();
      value = decode(part.slice(at + 1));
    }
    values[key] = has(values, key) ? combine(values[key], value) : value;
  }
  return values;
}

/** `[].concat(a, b)`, at most {@link ARRAY_LIMIT} long (qs's `combine`). */
function combine(a: unknown, b: unknown): unknown[] {
  const result = ([] as unknown[]).concat(a, b);
  if (result.length > ARRAY_LIMIT) throw arrayLimitExceeded();
  return result;
}

/** `a[b][c]` -> `{ a: { b: { c: value } } }` (qs's `parseKeys` and `parseObject`). */
function parseKey(key: string, value: unknown, depth: number): unknown {
  if (key === '') return undefined;
  const segments = splitKey(key, depth);
  if (segments === undefined) return undefined;
  let leaf = value;
  for (let index = segments.length - 1; index >= 0; index--) {
    const root = segments[index]!;
    if (root === '[]') {
      leaf = combine([], leaf);
      continue;
    }
    const name = stripBrackets(root);
    const arrayIndex = parseInt(name, 10);
    const isIndex =
      !Number.isNaN(arrayIndex) && root !== name && String(arrayIndex) === name && arrayIndex >= 0;
    if (isIndex && arrayIndex < ARRAY_LIMIT) {
      const array: unknown[] = [];
      array[arrayIndex] = leaf;
      leaf = array;
    } else if (isIndex) {
      throw arrayLimitExceeded();
    } else {
      const object: Record<string, unknown> = {};
      if (name !== '__proto__') object[name] = leaf;
      leaf = object;
    }
  }
  return leaf;
}

function stripBrackets(key: string): string {
  return key.startsWith('[') && key.endsWith(']') ? key.slice(1, -1) : key;
}

/**
 * `a[b][c[]]` -> `['a', '[b]', '[c[]]']`, or `undefined` when a part names an
 * `Object.prototype` member (the whole pair is dropped). More than `depth` groups throws
 * (qs's `splitKeyIntoSegments` with `strictDepth`).
 */
function splitKey(key: string, depth: number): string[] | undefined {
  const segments: string[] = [];
  const first = key.indexOf('[');
  const parent = first >= 0 ? key.slice(0, first) : key;
  if (parent !== '') {
    if (has(Object.prototype, parent)) return undefined;
    segments.push(parent);
  }
  let open = first;
  let collected = 0;
  while (open >= 0 && collected < depth) {
    let level = 1;
    let close = -1;
    for (let index = open + 1; index < key.length && close < 0; index++) {
      const code = key.charCodeAt(index);
      if (code === 0x5b) level += 1;
      else if (code === 0x5d && --level === 0) close = index;
    }
    if (close < 0) {
      // An unterminated group stays one literal segment: "[[]b" -> "[[]b]".
      segments.push(`[${key.slice(open)}]`);
      return segments;
    }
    const segment = key.slice(open, close + 1);
    if (has(Object.prototype, segment.slice(1, -1))) return undefined;
    segments.push(segment);
    collected += 1;
    open = key.indexOf('[', close + 1);
  }
  if (open >= 0) {
    throw new RangeError(`Input depth exceeded depth option of ${depth} and strictDepth is true`);
  }
  return segments;
}

/** `object[key] = value`, a `__proto__` key stored as data (qs's `setProperty`). */
function setProperty(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, {
      configurable: true,
      enumerable: true,
      value,
      writable: true,
    });
  } else {
    object[key] = value;
  }
}

/** Entries present in a (possibly sparse) array. */
function countElements(array: unknown[]): number {
  let count = 0;
  for (let index = 0; index < array.length; index++) if (has(array, index)) count += 1;
  return count;
}

function arrayToObject(source: unknown[]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (let index = 0; index < source.length; index++) {
    if (source[index] !== undefined) object[index] = source[index];
  }
  return object;
}

/** Merges one parsed pair into the result so far (qs's `utils.merge` with `strictMerge`). */
function merge(target: unknown, source: unknown): unknown {
  if (!source) return target;
  if (!isContainer(source)) {
    if (isArray(target)) {
      if (countElements(target) >= ARRAY_LIMIT) throw arrayLimitExceeded();
      target[target.length] = source;
    } else if (isContainer(target)) {
      const last = conflicts.get(target);
      if (last === undefined) {
        const pair = [target, source];
        conflicts.set(pair, 1);
        return pair;
      }
      if (last + 1 >= ARRAY_LIMIT) throw arrayLimitExceeded();
      (target as Record<string, unknown>)[last + 1] = source;
      conflicts.set(target, last + 1);
    } else {
      return [target, source];
    }
    return target;
  }
  if (!isContainer(target)) return combine([target], source);

  if (isArray(target) && isArray(source)) {
    source.forEach((item, index) => {
      if (has(target, index)) {
        const existing = target[index];
        if (isContainer(existing) && isContainer(item)) target[index] = merge(existing, item);
        else target[target.length] = item;
      } else {
        target[index] = item;
      }
    });
    if (countElements(target) > ARRAY_LIMIT) throw arrayLimitExceeded();
    return target;
  }
  let into = target as Record<string, unknown>;
  if (isArray(target)) {
    into = arrayToObject(target);
    // The array may have grown past its last conflict: continue after its last index.
    if (conflicts.has(target)) conflicts.set(into, target.length - 1);
  }
  for (const [key, value] of Object.entries(source)) {
    setProperty(into, key, has(into, key) ? merge(into[key], value) : value);
    const last = conflicts.get(into);
    if (last !== undefined) {
      const index = parseInt(key, 10);
      if (String(index) === key && index > last) conflicts.set(into, index);
    }
  }
  return into;
}

/** Removes the holes of every array, innermost first (qs's `compact`). */
function compact(value: unknown): unknown {
  const queue: { holder: Record<string, unknown>; key: string }[] = [
    { holder: { value }, key: 'value' },
  ];
  const seen = new Set<object>();
  for (let index = 0; index < queue.length; index++) {
    const { holder, key } = queue[index]!;
    const container = holder[key] as Record<string, unknown>;
    for (const child of Object.keys(container)) {
      const item = container[child];
      if (isContainer(item) && !seen.has(item)) {
        queue.push({ holder: container, key: child });
        seen.add(item);
      }
    }
  }
  while (queue.length > 1) {
    const { holder, key } = queue.pop()!;
    const container = holder[key];
    if (isArray(container)) holder[key] = container.filter((_, i) => container[i] !== undefined);
  }
  return value;
}
