/** The handler of a create route: middleware, then a new persisted instance (201). */
import type { MachineDefinitionBase } from '../definition/types.js';
import type { HttpServices } from './http-services.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import { isJsonObject } from './request-data.js';
import { createdEnvelope, guarded, HttpError } from './responses.js';
import type { EndpointRequest, PlannedRoute, RouteHandler } from './types.js';
import { withIdempotency, type IdempotentRequest } from './idempotency.js';

/** Builds the handler of one planned create route (`route.handler === 'create'`). */
export function createCreateHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const handle = (request: EndpointRequest, idempotent: IdempotentRequest | null) =>
    guarded(route, services.logger, async (request: EndpointRequest) => {
      // An Idempotency-Key claim ran the middleware before claiming.
      if (idempotent === null) {
        const response = await runMiddleware(middleware, request);
        if (response) return response;
      }
      // Create reads nothing from its body, but a body it is sent is held to the same rule as
      // event routes (docs/http.md "Bad input": a body that is not an object is a 400).
      const body = request.body;
      if (body !== undefined && !isJsonObject(body)) {
        throw new HttpError(400, 'The request body must be a JSON object.');
      }
      const { snapshot } = await services.instances.create(definition);
      if (idempotent !== null) idempotent.committed = true;
      return {
        status: route.status,
        body: createdEnvelope({
          id: snapshot.id,
          state: snapshot.value,
          output: services.resolveOutput(definition, snapshot, null),
        }),
      };
    })(request);
  return withIdempotency(route, services, handle, middleware);
}
