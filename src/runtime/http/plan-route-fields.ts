/**
 * The parts of a planned route taken from an endpoint or forward definition, and the paths
 * of routes under a registration's prefix.
 */
import type { EndpointDefinition, OutputDefinition } from '../definition/types.js';
import type { PlannedRoute, RouteBinding, RouteOutput } from './types.js';

/** The route fields an endpoint (or a forward, as an endpoint of its parent event) decides. */
export function endpointFields(
  endpoint: Pick<
    EndpointDefinition,
    'eventType' | 'method' | 'middleware' | 'output' | 'action' | 'status' | 'availableEvents'
  >,
  middleware: readonly string[],
): Pick<
  PlannedRoute,
  'method' | 'eventType' | 'middleware' | 'output' | 'action' | 'status' | 'availableEvents'
> {
  return {
    method: endpoint.method,
    eventType: endpoint.eventType,
    middleware: [...middleware, ...endpoint.middleware],
    output: routeOutput(endpoint.output),
    action: endpoint.action?.name ?? null,
    status: endpoint.status,
    availableEvents: endpoint.availableEvents,
  };
}

function routeOutput(output: OutputDefinition | null): RouteOutput {
  if (output === null) return { kind: 'default' };
  return output.kind === 'keys'
    ? { kind: 'keys', keys: [...output.keys] }
    : { kind: 'behavior', name: output.name };
}

/** A route's path: the prefix, the bound parameter if any, then the endpoint's URI. */
export function pathFor(prefix: string, binding: RouteBinding, uri: string): string {
  return binding.kind === 'none' ? `${prefix}${uri}` : `${prefix}/{${binding.param}}${uri}`;
}
