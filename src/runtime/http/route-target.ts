/**
 * The endpoint (or forward) behind a planned route, resolved from the definition once when the
 * handler is built: the plan is plain data and names it by `endpointIndex`.
 */
import type {
  EndpointDefinition,
  EventDefinition,
  ForwardDefinition,
  MachineDefinitionBase,
  OutputDefinition,
} from '../definition/types.js';
import type { EndpointActionDefinition } from '../definition/endpoint-config.js';
import type { PlannedRoute } from './types.js';

/** The endpoint-specific parts of a route. */
export interface RouteTarget {
  event: EventDefinition;
  action: EndpointActionDefinition | null;
  output: OutputDefinition | null;
  /** Body `type` values accepted besides the route's event type (a forward's child type). */
  acceptedTypes: readonly string[];
  /** Set for forwarded routes. */
  forward: ForwardDefinition | null;
}

/**
 * Resolves the endpoint (or forward) behind a route. A route that does not match the definition
 * was planned from another one: a programming error, thrown when the handler is built.
 */
export function resolveTarget(definition: MachineDefinitionBase, route: PlannedRoute): RouteTarget {
  const forwarded =
    route.handler === 'forwardedMachineIdBound' || route.handler === 'forwardedModelBound';
  const entry: EndpointDefinition | ForwardDefinition | undefined =
    route.endpointIndex === null
      ? undefined
      : forwarded
        ? definition.forwards[route.endpointIndex]
        : definition.endpoints[route.endpointIndex];
  const type = entry && ('parentEventType' in entry ? entry.parentEventType : entry.eventType);
  if (entry === undefined || type !== route.eventType) {
    throw new Error(
      `Route ${route.name} does not match machine '${definition.id}': plan it from this definition with planRoutes().`,
    );
  }
  if ('parentEventType' in entry) {
    // Forwards validate with the child's event definition and accept its type in the body.
    return {
      event: entry.childEvent,
      action: entry.action,
      output: entry.output,
      acceptedTypes: [entry.childEventType],
      forward: entry,
    };
  }
  return {
    event: entry.event,
    action: entry.action,
    output: entry.output,
    acceptedTypes: [],
    forward: null,
  };
}
