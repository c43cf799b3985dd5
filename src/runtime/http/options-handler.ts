/**
 * The handler of an OPTIONS route (plan-options.ts): 204 with `Allow`, the methods routed at
 * the path, and on instance paths `Machine-Events`, the event types the instance accepts now
 * (its availableEvents). Zero-write: the instance is read as a read route reads it (a model
 * record without a machine lists its initial state's events and gets no machine). Middleware
 * first: what an instance accepts is no more public than the instance.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import type { HttpServices } from './http-services.js';
import { allowValue, MACHINE_EVENTS_HEADER, machineEventsValue } from './instance-surface.js';
import { resolveMiddleware, runMiddleware } from './middleware-registry.js';
import type { OptionsRoute } from './plan-options.js';
import { guarded } from './responses.js';
import { createInstanceLoader } from './route-instance.js';
import type { RouteHandler } from './types.js';
import { pathParam } from './plan-route-fields.js';

/** Builds the handler of one OPTIONS route. */
export function createOptionsHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: OptionsRoute,
  services: HttpServices<D>,
): RouteHandler {
  const { resolved: middleware, unknown } = resolveMiddleware(
    route.middleware,
    services.middleware,
  );
  if (unknown.length > 0) {
    throw new Error(`Route ${route.name}: unknown middleware ${unknown.join(', ')}.`);
  }
  const instances = createInstanceLoader(definition, route, services);
  const fallbackAllow = allowValue([...route.methods, 'OPTIONS']);
  return guarded(route, services.logger, async (request) => {
    if (middleware.length > 0) {
      const shortCircuit = await runMiddleware(middleware, request);
      if (shortCircuit) return shortCircuit;
    }
    const headers: Record<string, string> = {
      allow: services.paths?.allow(route.path) ?? fallbackAllow,
    };
    if (pathParam(route.binding) !== null) {
      // 404 for an unknown id or record, as every route of the path answers.
      const current = await instances.load(request);
      const snapshot =
        current.kind === 'persisted' ? current.snapshot : services.initialSnapshot(definition);
      headers[MACHINE_EVENTS_HEADER] = machineEventsValue(
        await services.availableEvents(definition, snapshot),
      );
    }
    return { status: 204, body: undefined, headers };
  });
}
