/**
 * The handler of an event route (stateless, machineId-bound, model-bound, forwarded), spec
 * "Request handling order" 1-9:
 *
 *   middleware -> model binding / machine loading -> event resolution and validation
 *   -> action before() (pre-transition state, may abort) -> send
 *   -> contention (423 / GET 200, no hooks) | onException | after() (post-transition state)
 *   -> output (endpoint output, else state output, else context + computed values)
 *
 * Lock contention (`MachineAlreadyRunningException`) is answered 423 for POST/PUT/PATCH/DELETE
 * and 200 for GET, with the envelope of the last committed state and `isProcessing: true`: at
 * once, or on a route with `contention: { wait }` once its wait for the lock ran out.
 * The spec's errors table also lists 409 for this exception: that is the exception's own
 * `statusCode` (its entry in the exception table, used by callers outside the endpoint layer
 * and by actions that abort with it). Endpoints follow the spec's lifecycle rows instead: the
 * client gets a usable state plus a signal to wait for the next broadcast, not an error.
 */
import { FlowLimitedException, PreconditionFailedException } from '../errors.js';
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import type { ScenarioRequest } from '../interpreter/scenarios.js';
import type { MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { SendOptions } from '../persistence/types.js';
import { withCallbackToken } from './callback-handler.js';
import { headerOf, ifMatchPrecondition } from './conditional.js';
import { createEventRoute } from './event-route.js';
import { createStatelessAnswer, STATELESS, STATELESS_SEND } from './event-stateless.js';
import { hookArgs, idempotentSend, noteCommitted, sendFailed } from './event-steps.js';
import { earlyFlowRefusal, flowLimitedResponse, type FlowTicket } from './flow-control.js';
import type { HttpServices } from './http-services.js';
import { withIdempotency, type IdempotentRequest } from './idempotency.js';
import { isWrongState, withRefusalSurface } from './instance-surface.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import { isRead } from './request-data.js';
import { withEarlyAnswer, withImmediateAnswer, type ImmediateAnswer } from './handler-forms.js';
import { validationResponse } from './response-bodies.js';
import { keyOf, type RouteInstance } from './route-instance.js';
import { readScenarioRequest } from './scenario-fields.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';
import { payloadPlacementHint, type PayloadValidation } from './validation-errors.js';

/** Builds the handler of one planned event route. */
export function createEventHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const r = createEventRoute(definition, route, services);
  const { target, instances, eventType, deferredLoad, deferredParam, stateless } = r;
  const { sendStatelessSync, scenarios, respond, gate, versioned, validate, failure } = r;

  // Made once per route: a request allocates no handler closures of its own. The handler never
  // throws: an escaped error becomes its response (what `guarded` does for the other handlers,
  // written out here so that a request runs one async function, not two).
  const handle = async (
    request: EndpointRequest,
    idempotent: IdempotentRequest | null,
  ): Promise<EndpointResponse> => {
    // Flow control's hold on the request (an in-flight slot), given back once it is answered.
    let ticket: FlowTicket | null = null;
    try {
      // 1. Middleware (an Idempotency-Key claim ran it before claiming).
      if (middleware.length > 0 && idempotent === null) {
        const shortCircuit = await runMiddleware(middleware, request);
        if (shortCircuit) return shortCircuit;
      }

      // HEAD (which frameworks route to GET handlers) is safe by definition: it answers what
      // the instance is now (404 for an unknown one) and never sends the event.
      if (request.method === 'HEAD') {
        const current = await instances.load(request);
        const snapshot =
          current.kind === 'persisted' ? current.snapshot : services.initialSnapshot(definition);
        return await respond({
          snapshot,
          status: 200,
          isProcessing: false,
          event: { type: eventType },
        });
      }

      // 2. Model binding or machine loading (404 for unknown ids comes from errorToResponse).
      const found: RouteInstance = stateless
        ? STATELESS
        : deferredLoad
          ? { kind: 'deferred', id: request.params[deferredParam] ?? '' }
          : await instances.load(request);

      // 3. Event resolution and validation: the scenario fields first (an unknown slug is a 404
      // before anything is created), then the payload.
      let scenario: ScenarioRequest | undefined;
      let validation: PayloadValidation;
      try {
        if (scenarios !== undefined) {
          scenario = readScenarioRequest(request, isRead(request));
          if (scenario.kind === 'play') scenarios.find(definition, scenario.slug);
        }
        const checked = validate(request);
        validation = checked instanceof Promise ? await checked : checked;
      } catch (error) {
        if (found.kind === 'deferred') await instances.load(request);
        throw error;
      }
      if (!validation.ok) {
        if (found.kind === 'deferred') await instances.load(request);
        return validationResponse(
          validation.errors,
          isRead(request) ? undefined : payloadPlacementHint(request.body),
        );
      }
      const event: EventObject = { type: eventType, payload: validation.payload };
      // Create-or-send: the instance is named by a business key of the valid payload.
      const businessKey = found.kind === 'keyed' ? keyOf(validation.payload, found.field) : null;
      if (typeof businessKey === 'object' && businessKey !== null)
        return validationResponse(businessKey);
      // A record without a machine stays unbound until the send: its machine is created, with
      // the event applied, only if the event is accepted (instances.sendFirst).
      let instance: RouteInstance = found;
      // If-Match: checked by the runtime on the snapshot it reads under the lock.
      const precondition = stateless
        ? undefined
        : ifMatchPrecondition(headerOf(request, 'if-match'));
      if (precondition !== undefined && instance.kind === 'unbound') {
        // No machine, so no version the tag could name (RFC 9110 §13.1.1): nothing is created.
        throw new PreconditionFailedException(
          `Route ${route.name}: the record has no machine of '${definition.id}' yet, so If-Match cannot match.`,
          null,
          { machine: definition.id },
        );
      }

      // Flow control: admitted, or 429 before anything runs (docs/http.md "Flow control").
      if (gate !== null) {
        const admitted = await gate.admit(
          request,
          validation.payload,
          instance.kind === 'persisted' ? instance.snapshot.context : undefined,
        );
        if (admitted instanceof FlowLimitedException) return flowLimitedResponse(admitted);
        ticket = admitted;
      }

      // 4. before() with the pre-transition state.
      const action = target.action;
      const pre =
        instance.kind === 'persisted'
          ? instance.snapshot
          : instance.kind === 'deferred'
            ? null
            : action?.before
              ? services.initialSnapshot(definition)
              : null;
      const preId =
        instance.kind === 'stateless' || instance.kind === 'unbound' || instance.kind === 'keyed'
          ? null
          : instance.id;
      if (action?.before) await action.before(hookArgs(definition, event, request, pre, preId));

      // 5. Send.
      let snapshot: MachineSnapshot;
      let kept: StoredScenario | null = null;
      let reached: MachineSnapshot | undefined;
      const idempotency = idempotentSend(r, request, idempotent, event);
      try {
        const options: SendOptions = {};
        if (scenario !== undefined) options.scenario = scenario;
        if (idempotency !== undefined) options.idempotency = idempotency;
        // `contention: { wait }`: queue for a busy instance instead of answering 423 at once.
        if (route.contention !== undefined) options.lockWaitMs = route.contention.waitMs;
        if (precondition !== undefined) options.precondition = precondition;
        let result;
        if (instance.kind === 'stateless') {
          // The answer shows no history: the runtime need not build it. Without other options
          // (the common case) they are one shared object.
          const stateless =
            scenario === undefined && idempotency === undefined && route.contention === undefined
              ? STATELESS_SEND
              : { ...options, keepHistory: false };
          result = sendStatelessSync(definition, event, stateless);
        } else if (instance.kind === 'unbound') {
          result = await instances.sendFirst(instance.record, event, options);
          if (result === null) {
            // Another request bound the record first: this event goes to that machine.
            instance = await instances.load(request);
            if (instance.kind !== 'persisted')
              throw new Error(`Route ${route.name}: the record lost its machine while binding.`);
            result = await services.instances.send(definition, instance.id, event, options);
          }
        } else if (instance.kind === 'keyed') {
          const key = businessKey as string;
          result = await services.instances.createOrSend(definition, key, event, options);
        } else {
          result = await services.instances.send(definition, instance.id, event, options);
        }
        snapshot = result.snapshot;
        kept = result.scenario ?? null;
        reached = result.forwardedChild;
        noteCommitted(idempotent, instance, idempotency);
      } catch (error) {
        return await sendFailed(r, error, request, {
          instance,
          pre,
          preId,
          event,
          idempotent,
          idempotency,
        });
      }

      // 8. after() with the post-transition state.
      if (action?.after)
        await action.after(hookArgs(definition, event, request, snapshot, snapshot.id));

      // 9. Output (built synchronously unless it reads children: no await then).
      const answer = respond({
        snapshot,
        status: route.status,
        isProcessing: false,
        event,
        kept,
        reached,
      });
      return versioned(answer instanceof Promise ? await answer : answer, snapshot);
    } catch (error) {
      const response = failure(error, request);
      return isWrongState(error) && !stateless
        ? await withRefusalSurface(response, request, r.surfaceOf)
        : response;
    } finally {
      if (ticket !== null)
        await ticket.release().catch((error: unknown) => failure(error, request));
    }
  };

  const early = earlyFlowRefusal(route, gate);
  const withEarlyRefusal = (handler: RouteHandler): RouteHandler =>
    early === undefined ? handler : withEarlyAnswer(handler, early);

  const answerStateless = createStatelessAnswer({
    definition,
    eventType,
    status: route.status,
    validate,
    respond,
    contended: r.contended,
    failure,
  });

  const quickStateless =
    stateless &&
    middleware.length === 0 &&
    scenarios === undefined &&
    route.contention === undefined &&
    gate === null &&
    !target.action?.before &&
    !target.action?.after &&
    !target.action?.onException;
  // A callback URL's token is its claim: checked and claimed before `handle` sends.
  if (route.handler === 'callback') return withCallbackToken(definition, route, services, handle);
  if (!quickStateless)
    return withEarlyRefusal(withIdempotency(route, services, handle, middleware));
  // HEAD answers the initial state without sending (handle's own branch).
  const answer = (request: EndpointRequest): ImmediateAnswer =>
    request.method === 'HEAD' ? handle(request, null) : answerStateless(request, sendStatelessSync);
  if (route.idempotency === undefined) return withImmediateAnswer(answer);
  return withIdempotency(
    route,
    services,
    (request, idempotent) => {
      if (idempotent !== null) return handle(request, idempotent);
      const response = answer(request);
      return response instanceof Promise ? response : Promise.resolve(response);
    },
    middleware,
  );
}
