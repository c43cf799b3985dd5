/**
 * URI and route-name rules of the spec ("URI auto-generation", "Route shapes", route names),
 * in one place so that definition-time normalization, `planRoutes` and the adapters agree.
 * Pure string functions, no framework knowledge.
 */
import { camelCase, kebabCase } from '../naming.js';

/**
 * The URI generated for an event type: a trailing `_EVENT` is dropped first, then
 * SCREAMING_SNAKE_CASE becomes kebab-case, with a leading slash.
 *
 * @example endpointUriFor('SUBMIT_ORDER_EVENT') // '/submit-order'
 */
export function endpointUriFor(eventType: string): string {
  return `/${kebabCase(eventType.replace(/_EVENT$/, ''))}`;
}

/** Route name of an event endpoint: `<name>.<event_snake_lowercase>`. */
export function routeNameFor(name: string, eventType: string): string {
  return `${name}.${eventType.toLowerCase()}`;
}

/** Route name of a read: `<name>.read.<read name>`. */
export function readRouteNameFor(name: string, read: string): string {
  return `${name}.read.${read}`;
}

/** Route name of the create endpoint. */
export function createRouteNameFor(name: string): string {
  return `${name}.create`;
}

/**
 * Normalizes a registration prefix to exactly one leading slash and no trailing slash
 * (`'api/orders/'` -> `'/api/orders'`). Returns `null` when the prefix is unusable: empty,
 * only slashes, or containing characters that would change the route's meaning (a query,
 * a fragment, whitespace or a `{param}` of its own; the model parameter must stay the first
 * path parameter, see reference notes §4.28).
 */
export function normalizePrefix(prefix: unknown): string | null {
  if (typeof prefix !== 'string') return null;
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  if (trimmed === '' || !/^[A-Za-z0-9._~\-/]+$/.test(trimmed) || trimmed.includes('//')) {
    return null;
  }
  return `/${trimmed}`;
}

/** True when an endpoint URI can follow a prefix or a path parameter as it is. */
export function isValidEndpointUri(uri: string): boolean {
  return /^\/[A-Za-z0-9._~\-/]*$/.test(uri) && !uri.includes('//');
}

/**
 * The route parameter name of a model (`'Order'` -> `'order'`, `'line_item'` ->
 * `'lineItem'`, `'HTTPRequest'` -> `'httpRequest'`), like Laravel's
 * `Str::camel(class_basename(model))`.
 */
export function modelParamName(model: string): string {
  return camelCase(model);
}

/** OpenAPI-style path parameter names of a planned path, in order (`{machineId}` -> `machineId`). */
export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((match) => match[1]!);
}

/** A planned path in the `:param` syntax of Fastify and Express (`{machineId}` -> `:machineId`). */
export function toColonPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}
