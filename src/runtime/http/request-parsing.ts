/**
 * Body and query parsing shared by both adapters, so Fastify and Express accept and reject
 * exactly the same requests (and neither lets `__proto__` reach an object's prototype).
 */
import { HttpError } from './responses.js';

/** Default request-body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Keys that could reach a prototype when a parsed value is later merged or spread. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Parses a JSON request body. An empty body is `undefined`; malformed JSON is a 400
 * `HttpError`. `__proto__` keys, and `constructor` keys holding a `prototype`, are dropped
 * (the cases secure-json-parse guards against in Fastify), so nothing downstream can be
 * polluted by merging the body.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    // The reviver costs a second walk; only pay it when a dangerous key can be present.
    if (!text.includes('__proto__') && !text.includes('constructor')) return JSON.parse(text);
    return JSON.parse(text, function reviver(this: unknown, key: string, value: unknown) {
      if (key === '__proto__') return undefined;
      if (
        key === 'constructor' &&
        typeof value === 'object' &&
        value !== null &&
        'prototype' in value
      ) {
        return undefined;
      }
      return value;
    });
  } catch {
    throw new HttpError(400, 'Malformed JSON in request body.');
  }
}

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * Parses a query string the way PHP/Laravel does, which the spec's GET rules assume:
 * `a=1&a=2` -> `{ a: ['1', '2'] }`, `items[]=x` -> `{ items: ['x'] }`,
 * `payload[code]=7` -> `{ payload: { code: '7' } }`. Values stay strings (the schema coerces).
 */
export function parseQueryString(query: string): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const text = query.startsWith('?') ? query.slice(1) : query;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const rawKey = equals === -1 ? pair : pair.slice(0, equals);
    const rawValue = equals === -1 ? '' : pair.slice(equals + 1);
    const key = decode(rawKey);
    const value = decode(rawValue);
    const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
    const segments = match
      ? [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!)]
      : [key];
    if (segments.some((segment) => FORBIDDEN_KEYS.has(segment))) continue;
    assign(result, segments, value);
  }
  return result;
}

function assign(target: Record<string, unknown>, segments: string[], value: string): void {
  const [head, ...rest] = segments as [string, ...string[]];
  if (rest.length === 0) {
    const existing = target[head];
    if (existing === undefined) target[head] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else target[head] = [existing, value];
    return;
  }
  if (rest[0] === '') {
    // `items[]=x`: append to a list.
    const list = Array.isArray(target[head]) ? (target[head] as unknown[]) : (target[head] = []);
    if (rest.length === 1) (list as unknown[]).push(value);
    else {
      const item: Record<string, unknown> = {};
      (list as unknown[]).push(item);
      assign(item, rest.slice(1), value);
    }
    return;
  }
  const child = target[head];
  const next: Record<string, unknown> =
    typeof child === 'object' && child !== null && !Array.isArray(child)
      ? (child as Record<string, unknown>)
      : {};
  target[head] = next;
  assign(next, rest, value);
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new HttpError(400, 'Malformed query string.');
  }
}
