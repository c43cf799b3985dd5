/**
 * What an event route's handler (event-handler.ts) works out once per route and shares with
 * every request: its target and instance loader, whether the load is deferred to the send, its
 * responder and flow gate, and the steps that need only these: the payload check (3), the
 * contention answer (6), the version an answer shows and an escaped error's answer.
 */
import type { MachineAlreadyRunningException } from '../errors.js';
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import { isSnapshot, type MachineSnapshot } from '../interpreter/types.js';
import { withEtag } from './conditional.js';
import { createEventResponder } from './event-response.js';
import { createFlowGate, type FlowGate } from './flow-control.js';
import type { HttpServices } from './http-services.js';
import type { RefusalSurface } from './instance-surface.js';
import { assertPayloadSize, isRead, requestData } from './request-data.js';
import { defaultHttpLogger } from './http-logger.js';
import { errorToResponse } from './responses.js';
import { createInstanceLoader, type InstanceLoader, type RouteInstance } from './route-instance.js';
import { resolveTarget, type RouteTarget } from './route-target.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute } from './types.js';
import { checkPayload, type PayloadValidation } from './validation-errors.js';

/** One event route's shared state and per-route steps; made once, used by every request. */
export interface EventRoute<D extends MachineDefinitionBase> {
  readonly definition: D;
  readonly route: PlannedRoute;
  readonly services: HttpServices<D>;
  readonly target: RouteTarget;
  readonly instances: InstanceLoader;
  readonly eventType: string;
  /**
   * A machineId-bound route whose action needs no pre-transition state skips the separate
   * restore of step 2: `send` loads the instance itself and answers MachineNotFoundException
   * for unknown ids. The restore still runs before a 400/422 answer, so an unknown id stays a
   * 404 whatever the body.
   */
  readonly deferredLoad: boolean;
  readonly deferredParam: string;
  /** A stateless route has no instance to load: no promise round trip for it. */
  readonly stateless: boolean;
  readonly sendStatelessSync: HttpServices<D>['instances']['sendStatelessSync'];
  /** Forwarded responses carry no scenario fields: the child's kept scenario applies inside. */
  readonly scenarios: HttpServices<D>['scenarios'] | undefined;
  readonly respond: ReturnType<typeof createEventResponder>;
  readonly surfaceOf: RefusalSurface<D>;
  readonly gate: FlowGate | null;
  /**
   * The version an answer shows (what an If-Match of the next request names), on the answer
   * and on the response an Idempotency-Key replays; a stateless or unpersisted one has none.
   */
  versioned(response: EndpointResponse, snapshot: MachineSnapshot): EndpointResponse;
  /** 3. The event's payload read from the request and validated (a promise for async schemas). */
  validate(request: EndpointRequest): PayloadValidation | Promise<PayloadValidation>;
  /**
   * 6. Contention: the last committed state, isProcessing true, no hooks. Without a snapshot on
   * the exception (the store could not read one) nor a loaded one (deferred load), it is read
   * now: the answer stays 423 / 200.
   */
  contended(
    error: MachineAlreadyRunningException,
    request: EndpointRequest,
    instance: RouteInstance,
    pre: MachineSnapshot | null,
    event: EventObject,
  ): Promise<EndpointResponse>;
  /** The answer of an error that escaped the lifecycle (logged by errorToResponse). */
  failure(error: unknown, request: EndpointRequest): EndpointResponse;
}

/** Works out the shared state of one planned event route. */
export function createEventRoute<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  services: HttpServices<D>,
): EventRoute<D> {
  const target = resolveTarget(definition, route);
  const instances = createInstanceLoader(definition, route, services);
  const eventType = route.eventType as string;
  const stateless = route.binding.kind === 'none';
  const scenarios = target.forward === null ? services.scenarios : undefined;
  const respond = createEventResponder(definition, route, target, services, scenarios);
  const findInState = services.instances.findInstancesInState?.bind(services.instances);

  const contended = async (
    error: MachineAlreadyRunningException,
    request: EndpointRequest,
    instance: RouteInstance,
    pre: MachineSnapshot | null,
    event: EventObject,
  ) => {
    const committed = isSnapshot(error.snapshot)
      ? error.snapshot
      : (pre ??
        (instance.kind === 'stateless' || instance.kind === 'unbound' || instance.kind === 'keyed'
          ? null
          : await services.instances.restore(definition, instance.id).catch(() => null)));
    if (committed === null) throw error;
    const kept =
      scenarios === undefined || instance.kind === 'stateless' || instance.kind === 'unbound'
        ? null
        : await scenarios.kept(committed.id);
    return await respond({
      snapshot: committed,
      status: isRead(request) ? 200 : 423,
      isProcessing: true,
      event,
      kept,
    });
  };

  return {
    definition,
    route,
    services,
    target,
    instances,
    eventType,
    deferredLoad:
      route.handler === 'machineIdBound' &&
      route.binding.kind === 'machineId' &&
      !target.action?.before &&
      !target.action?.onException &&
      !(route.flow?.key != null && 'context' in route.flow.key),
    deferredParam: route.binding.kind === 'machineId' ? route.binding.param : '',
    stateless,
    sendStatelessSync: services.instances.sendStatelessSync.bind(services.instances),
    scenarios,
    respond,
    surfaceOf: { definition, route, services, instances },
    gate: createFlowGate(
      route,
      services.flowControl,
      findInState &&
        (async (state, limit) => (await findInState(definition, state, { limit })).length),
    ),
    versioned: (response, snapshot) =>
      stateless || !definition.options.shouldPersist ? response : withEtag(response, snapshot),
    validate: (request) => {
      const data = requestData(request, eventType, target.acceptedTypes, scenarios !== undefined);
      assertPayloadSize(
        data.payload,
        eventType,
        target.event.payloadLimit ?? services.payloadLimit,
      );
      return checkPayload(target.event.payload, data.payload, isRead(request) ? COERCE : NO_COERCE);
    },
    contended,
    failure: (error, request) =>
      errorToResponse(
        error,
        services.logger ?? request.log ?? defaultHttpLogger,
        route.name,
        request,
      ),
  };
}

const COERCE = Object.freeze({ coerce: true });
const NO_COERCE = Object.freeze({ coerce: false });
