/**
 * What a planned route answers besides its success: where its data comes from, the guards of
 * its `auth` middleware and every error status. Pure; planRoutes attaches it to each route, and
 * the runtime, the OpenAPI document and the client all read it from there.
 */
import type { EndpointActionDefinition } from '../definition/endpoint-config.js';
import { parseMiddlewareName } from './middleware-registry.js';
import type { PlannedRoute } from './types.js';

/** The fields of a planned route this module derives. */
export type RouteAnswers = Pick<
  PlannedRoute,
  'payloadSource' | 'authGuards' | 'errorStatuses' | 'actionStatuses'
>;

/** The route facts the answers follow from. */
export type RouteFacts = Pick<PlannedRoute, 'method' | 'handler' | 'binding' | 'middleware'>;

/** The answers of a route whose endpoint has `action` (null: none). */
export function routeAnswers(
  route: RouteFacts,
  action: Pick<EndpointActionDefinition, 'statuses'> | null,
): RouteAnswers {
  const payloadSource = route.method === 'GET' ? 'query' : 'body';
  const authGuards = authGuardsOf(route.middleware);
  const hasBody = payloadSource === 'body';
  // Sends to a stored instance; only one its path names can be unknown (404): a create-or-send
  // creates the instance its key names.
  const bound = route.binding.kind !== 'none';
  const named = route.binding.kind === 'machineId' || route.binding.kind === 'model';
  const sendsEvent =
    route.handler !== 'create' && route.handler !== 'read' && route.handler !== 'events';
  // Every route parses its query string before the handler runs: bad percent-encoding, nesting
  // deeper than 32 levels or more than 1,000 pairs is 400, on GET routes too.
  const statuses = new Set<number>([400]);
  // A body is parsed before the handler runs: malformed (400), too large (413), not JSON (415).
  if (hasBody) [413, 415].forEach((status) => statuses.add(status));
  if (authGuards !== null) statuses.add(401);
  if (named) statuses.add(404);
  // No transition (409), payload or validation guard (422).
  if (sendsEvent) [409, 422].forEach((status) => statuses.add(status));
  // A read's `waitFor` naming no state, or a `timeout` out of range.
  if (route.handler === 'read') statuses.add(422);
  // If-Match naming a version the instance moved on from (docs/http.md "Conditional requests").
  if (bound && sendsEvent) statuses.add(412);
  // Contention: a write answers 423, a GET answers 200 with `isProcessing: true`.
  if (bound && sendsEvent && hasBody) statuses.add(423);
  // A callback URL's token: not signed for this instance and event (403), expired (410), used
  // (409). A webhook's signature or timestamp refused (401); the instance its body names (404).
  if (route.handler === 'callback') [403, 409, 410].forEach((status) => statuses.add(status));
  if (route.handler === 'webhook')
    [401, 404, 409, 412, 423].forEach((status) => statuses.add(status));
  statuses.add(500);
  const actionStatuses: Record<string, string> = {};
  for (const [status, description] of Object.entries(action?.statuses ?? {})) {
    statuses.add(Number(status));
    actionStatuses[status] = description;
  }
  return {
    payloadSource,
    authGuards,
    errorStatuses: [...statuses].sort((a, b) => a - b),
    actionStatuses,
  };
}

/** The guards of every `auth` middleware of a route, deduplicated; `null` when none. */
export function authGuardsOf(middleware: readonly string[]): string[] | null {
  const auth = middleware.map(parseMiddlewareName).filter(({ name }) => name === 'auth');
  if (auth.length === 0) return null;
  return [...new Set(auth.flatMap(({ args }) => args))];
}
