/**
 * `createRouteHandler`: the framework-neutral handler of one planned route. It resolves the
 * route's middleware once and hands the route to the handler of its kind: reads
 * (read-handler.ts), the state stream (events-handler.ts), create (create-handler.ts) or events (event-handler.ts, the spec's
 * "Request handling order"). A handler never throws: every failure becomes a JSON response
 * through `responses.ts`.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import { createCreateHandler } from './create-handler.js';
import { createEventHandler } from './event-handler.js';
import { createEventsHandler } from './events-handler.js';
import type { HttpServices } from './http-services.js';
import { resolveMiddleware } from './middleware-registry.js';
import { createReadHandler } from './read-handler.js';
import { tracedRoute } from './traced-route.js';
import { createWebhookHandler } from './webhook-handler.js';
import type { PlannedRoute, RouteHandler } from './types.js';

export type { HttpServices } from './http-services.js';

/**
 * Builds the handler of one planned route. Middleware names, the model binder and the
 * endpoint are resolved here, once; an unresolvable route is a programming error (the
 * router validated it), so this throws instead of answering 500 on every request.
 */
export function createRouteHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  services: HttpServices<D>,
): RouteHandler {
  return tracedRoute(route, createUntracedHandler(definition, route, services));
}

function createUntracedHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  services: HttpServices<D>,
): RouteHandler {
  const { resolved: middleware, unknown } = resolveMiddleware(
    route.middleware,
    services.middleware,
  );
  if (unknown.length > 0) {
    throw new Error(`Route ${route.name}: unknown middleware ${unknown.join(', ')}.`);
  }
  if (route.handler === 'read') return createReadHandler(definition, route, middleware, services);
  if (route.handler === 'events')
    return createEventsHandler(definition, route, middleware, services);
  if (route.handler === 'create')
    return createCreateHandler(definition, route, middleware, services);
  if (route.handler === 'webhook') return createWebhookHandler(definition, route, services);
  return createEventHandler(definition, route, middleware, services);
}
