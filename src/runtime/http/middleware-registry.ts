/**
 * Middleware by name. Route middleware is named like the host framework's (`auth:<guard>`):
 * the part before `:` picks the registry entry, the part after it (comma-separated) becomes
 * the entry's arguments, so `auth:admin` runs `auth` with `['admin']`.
 */
import type { EndpointRequest, EndpointResponse } from './types.js';

/**
 * A framework-neutral middleware. Return nothing to continue, or a response to answer with
 * it at once (the handler and later middleware never run), e.g. 401 `{ message: 'Unauthenticated.' }`.
 * Middleware runs before the body is read: one that reads `request.body` gets the body's own
 * 400/415 thrown there when the body cannot be read (the route answers it).
 */
export type Middleware = (
  request: EndpointRequest,
  args: readonly string[],
) => void | EndpointResponse | Promise<void | EndpointResponse>;

/** Middleware entries by name, as handed to `MachineRouter`. */
export type MiddlewareRegistry = Readonly<Record<string, Middleware>>;

/** A route middleware name split into its registry entry and arguments. */
export interface MiddlewareReference {
  name: string;
  args: string[];
}

/** `'auth:admin,editor'` -> `{ name: 'auth', args: ['admin', 'editor'] }`. */
export function parseMiddlewareName(reference: string): MiddlewareReference {
  const colon = reference.indexOf(':');
  if (colon === -1) return { name: reference, args: [] };
  const args = reference
    .slice(colon + 1)
    .split(',')
    .map((arg) => arg.trim())
    .filter((arg) => arg !== '');
  return { name: reference.slice(0, colon), args };
}

/** A route's middleware resolved against a registry, ready to run in order. */
export interface ResolvedMiddleware {
  reference: string;
  run: Middleware;
  args: readonly string[];
}

/**
 * Resolves middleware names against a registry. Unknown names are returned separately so the
 * router can report them all at registration time.
 */
export function resolveMiddleware(
  references: readonly string[],
  registry: MiddlewareRegistry,
): { resolved: ResolvedMiddleware[]; unknown: string[] } {
  const resolved: ResolvedMiddleware[] = [];
  const unknown: string[] = [];
  for (const reference of references) {
    const { name, args } = parseMiddlewareName(reference);
    const run = Object.hasOwn(registry, name) ? registry[name] : undefined;
    if (typeof run === 'function') resolved.push({ reference, run, args });
    else unknown.push(reference);
  }
  return { resolved, unknown };
}

/** Runs middleware in order; the first response returned short-circuits the rest. */
export async function runMiddleware(
  middleware: readonly ResolvedMiddleware[],
  request: EndpointRequest,
): Promise<EndpointResponse | null> {
  for (const entry of middleware) {
    const response = await entry.run(request, entry.args);
    if (response) return response;
  }
  return null;
}
