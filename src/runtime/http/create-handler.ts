/**
 * The handler of a create route: middleware, then flow control when the registration declares
 * it for `@create` (docs/http.md "Flow control"), then a new persisted instance (201).
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import { FlowLimitedException } from '../errors.js';
import {
  createFlowGate,
  earlyFlowRefusal,
  flowLimitedResponse,
  type FlowTicket,
} from './flow-control.js';
import type { HttpServices } from './http-services.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import { isJsonObject } from './request-data.js';
import { guarded } from './responses.js';
import { withEarlyAnswer } from './handler-forms.js';
import { createdEnvelope, HttpError } from './response-bodies.js';
import type { EndpointRequest, PlannedRoute, RouteHandler } from './types.js';
import { withIdempotency, type IdempotentRequest } from './idempotency.js';

/** Builds the handler of one planned create route (`route.handler === 'create'`). */
export function createCreateHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const gate = createFlowGate(route, services.flowControl);
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
      let ticket: FlowTicket | null = null;
      if (gate !== null) {
        const admitted = await gate.admit(request, undefined, undefined);
        if (admitted instanceof FlowLimitedException) return flowLimitedResponse(admitted);
        ticket = admitted;
      }
      try {
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
      } finally {
        await ticket?.release();
      }
    })(request);
  const handler = withIdempotency(route, services, handle, middleware);
  const early = earlyFlowRefusal(route, gate);
  return early === undefined ? handler : withEarlyAnswer(handler, early);
}
