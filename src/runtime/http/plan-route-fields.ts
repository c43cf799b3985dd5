/**
 * The parts of a planned route taken from an endpoint or forward definition, and the paths
 * of routes under a registration's prefix.
 */
import type { EndpointDefinition, OutputDefinition } from '../definition/types.js';
import type { PlannedRoute, RouteBinding, RouteHandlerKind, RouteOutput } from './types.js';

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

// The handler of an endpoint's route, by how the route finds its instance.
const ENDPOINT_HANDLERS = {
  machineId: 'machineIdBound',
  model: 'modelBound',
  key: 'keyBound',
  none: 'stateless',
} as const satisfies Record<RouteBinding['kind'], RouteHandlerKind>;

/** The handler of an endpoint's route bound as `binding`. */
export function endpointHandler(binding: RouteBinding): RouteHandlerKind {
  return ENDPOINT_HANDLERS[binding.kind];
}

/** A route's path: the prefix, the bound parameter if any, then the endpoint's URI. */
export function pathFor(prefix: string, binding: RouteBinding, uri: string): string {
  const param = pathParam(binding);
  return param === null ? `${prefix}${uri}` : `${prefix}/{${param}}${uri}`;
}

/**
 * The path parameter naming a route's instance (`machineId`, the model's), `null` when its path
 * names none: stateless routes and create-or-send, whose key is in the payload.
 */
export function pathParam(binding: RouteBinding): string | null {
  return binding.kind === 'machineId' || binding.kind === 'model' ? binding.param : null;
}
