/**
 * The request lifecycle of one planned route, framework-neutral (spec "Request handling
 * order" 1-9):
 *
 *   middleware -> model binding / machine loading -> event resolution and validation
 *   -> action before() (pre-transition state, may abort) -> send
 *   -> contention (423 / GET 200, no hooks) | onException | after() (post-transition state)
 *   -> output (endpoint output, else state output, else context + computed values)
 *
 * A handler never throws: every failure becomes a JSON response through `responses.ts`.
 *
 * Lock contention (`MachineAlreadyRunningException`) is answered 423 for POST/PUT/PATCH/DELETE
 * and 200 for GET, with the envelope of the last committed state and `isProcessing: true`.
 * The spec's errors table also lists 409 for this exception: that is the exception's own
 * `statusCode` (its entry in the exception table, used by callers outside the endpoint layer
 * and by actions that abort with it). Endpoints follow the spec's lifecycle rows instead: the
 * client gets a usable state plus a signal to wait for the next broadcast, not an error.
 */
import {
  MachineAlreadyRunningException,
  MachineOutputInjectionException,
  MachineValidationException,
  ScenarioFailedException,
  ScenarioNotFoundException,
} from '../errors.js';
import type {
  EndpointActionArgs,
  EndpointActionDefinition,
  EndpointDefinition,
  EndpointResponse,
  EventDefinition,
  EventObject,
  ForwardDefinition,
  MachineDefinitionBase,
  OutputDefinition,
} from '../definition/types.js';
import type { AvailableEvent, MachineSnapshot } from '../interpreter/types.js';
import type { MachineInstances } from '../persistence/types.js';
import {
  resolveMiddleware,
  runMiddleware,
  type MiddlewareRegistry,
} from './middleware-registry.js';
import {
  createdEnvelope,
  forwardedEnvelope,
  guarded,
  HttpError,
  machineEnvelope,
  validationResponse,
} from './responses.js';
import type {
  EndpointRequest,
  HttpLogger,
  ModelBinder,
  PlannedRoute,
  RouteHandler,
} from './types.js';
import { validatePayload, type PayloadValidation } from './validation-errors.js';
import { createReadHandler } from './read-handler.js';
import {
  readScenarioRequest,
  scenarioFields,
  withoutScenarioKeys,
  type ScenarioServices,
} from './scenario-fields.js';
import type { ScenarioRequest } from '../interpreter/scenarios.js';
import type { StoredScenario } from '../interpreter/types.js';

/**
 * What handlers need from the rest of the runtime. `MachineRouter` fills it from the
 * interpreter and persistence modules; tests may pass doubles.
 */
export interface HttpServices<D extends MachineDefinitionBase> {
  instances: MachineInstances<D>;
  /** May read children (forwarded events), hence possibly async. */
  availableEvents(
    definition: D,
    snapshot: MachineSnapshot,
  ): AvailableEvent[] | Promise<AvailableEvent[]>;
  /** `event` is the event just sent, shown to output behaviors. */
  resolveOutput(
    definition: D,
    snapshot: MachineSnapshot,
    output: OutputDefinition | null,
    event?: EventObject,
  ): unknown;
  /** The initial snapshot of a fresh, unpersisted instance (stateless `before()` hooks). */
  initialSnapshot(definition: D): MachineSnapshot;
  /**
   * The running child a forwarded event reached, for `data.child` of forwarded responses.
   * Optional: without it forwarded responses carry `child: null`.
   */
  forwardedChild?(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null>;
  /**
   * A forward's output: its output behavior run with the parent and the child (`args.child`,
   * see defineChildOutput), and `data.child` (state, context filtered by a key-list output).
   * Optional: without it the behavior runs with the parent only and `data.child.output` is the
   * child's context.
   */
  forwardedOutput?(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
    child: MachineSnapshot | null,
    event: EventObject,
  ): { output: unknown; child: { state: readonly string[]; output: unknown } | null };
  middleware: MiddlewareRegistry;
  models: Readonly<Record<string, ModelBinder>>;
  logger: HttpLogger;
  /** Largest event payload in bytes (serialised JSON) when the event sets no `payloadLimit`. */
  payloadLimit: number;
  /**
   * Present when scenarios are enabled: event routes (not create, not forwards) read
   * `scenario` / `scenarioParams` and answer `availableScenarios` / `activeScenario`. Absent,
   * requests are handled exactly as without scenarios (their fields are ignored).
   */
  scenarios?: ScenarioServices<D>;
}

/** The endpoint-specific parts of a route, resolved from the definition once. */
interface RouteTarget {
  event: EventDefinition;
  action: EndpointActionDefinition | null;
  output: OutputDefinition | null;
  /** Body `type` values accepted besides the route's event type (a forward's child type). */
  acceptedTypes: readonly string[];
  /** Set for forwarded routes. */
  forward: ForwardDefinition | null;
}

/** Where the instance of a request comes from. */
type Instance =
  | { kind: 'stateless' }
  | { kind: 'persisted'; id: string; snapshot: MachineSnapshot }
  /** machineId-bound, not loaded yet: `send` loads it (see `deferredLoad`). */
  | { kind: 'deferred'; id: string }
  /** A model record without a machine yet: one is created once the request is valid. */
  | { kind: 'unbound'; record: unknown };

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
  const { resolved: middleware, unknown } = resolveMiddleware(
    route.middleware,
    services.middleware,
  );
  if (unknown.length > 0) {
    throw new Error(`Route ${route.name}: unknown middleware ${unknown.join(', ')}.`);
  }
  if (route.handler === 'read') return createReadHandler(definition, route, middleware, services);
  if (route.handler === 'create') {
    return guarded(route, services.logger, async (request) => {
      const response = await runMiddleware(middleware, request);
      if (response) return response;
      // Create reads nothing from its body, but a body it is sent is held to the same rule as
      // event routes (docs/http.md "Bad input": a body that is not an object is a 400).
      const body = request.body;
      if (body !== undefined && !isJsonObject(body)) {
        throw new HttpError(400, 'The request body must be a JSON object.');
      }
      const { snapshot } = await services.instances.create(definition);
      return {
        status: route.status,
        body: createdEnvelope({
          id: snapshot.id,
          state: snapshot.value,
          output: services.resolveOutput(definition, snapshot, null),
        }),
      };
    });
  }

  const target = resolveTarget(definition, route);
  const binder = route.binding.kind === 'model' ? services.models[route.binding.model] : undefined;
  if (route.binding.kind === 'model' && binder === undefined) {
    throw new Error(`Route ${route.name}: no model binder named '${route.binding.model}'.`);
  }
  const eventType = route.eventType as string;
  // A machineId-bound route whose action needs no pre-transition state skips the separate
  // restore of step 2: `send` loads the instance itself and answers MachineNotFoundException
  // for unknown ids. The restore still runs before a 400/422 answer, so an unknown id stays a
  // 404 whatever the body.
  const deferredLoad =
    route.handler === 'machineIdBound' &&
    route.binding.kind === 'machineId' &&
    !target.action?.before &&
    !target.action?.onException;
  const deferredParam = route.binding.kind === 'machineId' ? route.binding.param : '';
  // Forwarded responses carry no scenario fields: the child's kept scenario applies inside.
  const scenarios = target.forward === null ? services.scenarios : undefined;

  /** A record without a machine yet is `unbound`: nothing is written while loading. */
  const loadInstance = async (request: EndpointRequest): Promise<Instance> => {
    const binding = route.binding;
    if (binding.kind === 'none') return { kind: 'stateless' };
    if (binding.kind === 'machineId') {
      const id = request.params[binding.param] ?? '';
      return { kind: 'persisted', id, snapshot: await services.instances.restore(definition, id) };
    }
    const record = await binder!.find(request.params[binding.param] ?? '');
    if (record === null || record === undefined)
      throw new HttpError(404, `${binding.model} not found.`);
    const stored = binder!.readMachineId(record, binding.attribute);
    if (stored) {
      return {
        kind: 'persisted',
        id: stored,
        snapshot: await services.instances.restore(definition, stored),
      };
    }
    return { kind: 'unbound', record };
  };

  /**
   * No machine yet: create and persist one and store its id on the record (the original's lazy
   * MachineCast, which created an unpersisted machine; persisting keeps the id stable). Only
   * once the request passed validation, so a refused request writes nothing.
   */
  const bindRecord = async (record: unknown): Promise<Instance & { kind: 'persisted' }> => {
    const attribute = route.binding.kind === 'model' ? route.binding.attribute : '';
    const { snapshot } = await services.instances.create(definition);
    await binder!.writeMachineId(record, attribute, snapshot.id);
    return { kind: 'persisted', id: snapshot.id, snapshot };
  };

  const respond = async (
    snapshot: MachineSnapshot,
    status: number,
    isProcessing: boolean,
    event: EventObject,
    kept: StoredScenario | null = null,
    /** The child a forwarded send reached, as its step left it (not read again). */
    reached?: MachineSnapshot,
  ): Promise<EndpointResponse> => {
    let available = route.availableEvents
      ? services.availableEvents(definition, snapshot)
      : undefined;
    if (available instanceof Promise) available = await available;
    if (target.forward === null) {
      const output = services.resolveOutput(definition, snapshot, target.output, event);
      return {
        status,
        body: machineEnvelope({
          id: snapshot.id,
          state: snapshot.value,
          availableEvents: available,
          output,
          isProcessing,
          scenarios: scenarios && scenarioFields(scenarios, definition, snapshot, kept),
        }),
      };
    }
    const child =
      reached ?? (await services.forwardedChild?.(definition, snapshot, target.forward)) ?? null;
    if (services.forwardedOutput) {
      let resolved: ReturnType<NonNullable<typeof services.forwardedOutput>>;
      try {
        resolved = services.forwardedOutput(definition, snapshot, target.forward, child, event);
      } catch (error) {
        // Contention answers the last committed state (spec "Errors": the standard envelope,
        // isProcessing true): the event was not processed, so an output behavior that reads
        // the child's final output may find the child in a state without one. The parent's own
        // output (state output, else context) stands in; on the normal path this stays an error.
        if (!isProcessing || !(error instanceof MachineOutputInjectionException)) throw error;
        resolved = {
          output: services.resolveOutput(definition, snapshot, null, event),
          child: child && { state: child.value, output: childOutput(child, null) },
        };
      }
      return {
        status,
        body: forwardedEnvelope({
          id: snapshot.id,
          state: snapshot.value,
          availableEvents: available,
          output: resolved.output,
          child: resolved.child,
          isProcessing,
        }),
      };
    }
    return {
      status,
      body: forwardedEnvelope({
        id: snapshot.id,
        state: snapshot.value,
        availableEvents: available,
        // An output behavior describes the parent (reference notes §4.7); key lists filter the child.
        output:
          target.output?.kind === 'behavior'
            ? services.resolveOutput(definition, snapshot, target.output, event)
            : undefined,
        child: child && { state: child.value, output: childOutput(child, target.output) },
        isProcessing,
      }),
    };
  };

  return guarded(route, services.logger, async (request) => {
    // 1. Middleware.
    if (middleware.length > 0) {
      const shortCircuit = await runMiddleware(middleware, request);
      if (shortCircuit) return shortCircuit;
    }

    // HEAD (which frameworks route to GET handlers) is safe by definition: it answers what
    // the instance is now (404 for an unknown one) and never sends the event.
    if (request.method === 'HEAD') {
      const current = await loadInstance(request);
      const snapshot =
        current.kind === 'persisted' ? current.snapshot : services.initialSnapshot(definition);
      return await respond(snapshot, 200, false, { type: eventType });
    }

    // The scenario fields: an unknown slug is a 404 before anything is loaded or created.
    let scenario: ScenarioRequest | undefined;
    if (scenarios !== undefined) {
      scenario = readScenarioRequest(request, isRead(request));
      if (scenario.kind === 'play') scenarios.find(definition, scenario.slug);
    }

    // 2. Model binding or machine loading (404 for unknown ids comes from errorToResponse).
    const found: Instance = deferredLoad
      ? { kind: 'deferred', id: request.params[deferredParam] ?? '' }
      : await loadInstance(request);

    // 3. Event resolution and validation.
    let validation: PayloadValidation;
    try {
      const data = requestData(request, eventType, target.acceptedTypes, scenarios !== undefined);
      assertPayloadSize(
        data.payload,
        eventType,
        target.event.payloadLimit ?? services.payloadLimit,
      );
      validation = await validatePayload(target.event.payload, data.payload, {
        coerce: isRead(request),
      });
    } catch (error) {
      if (found.kind === 'deferred') await loadInstance(request);
      throw error;
    }
    if (!validation.ok) {
      if (found.kind === 'deferred') await loadInstance(request);
      return validationResponse(validation.errors);
    }
    const event: EventObject = { type: eventType, payload: validation.payload };
    const instance = found.kind === 'unbound' ? await bindRecord(found.record) : found;

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
    const hookArgs = (snapshot: MachineSnapshot | null, id: string | null): EndpointActionArgs => ({
      machineId: definition.id,
      id,
      state: {
        value: snapshot ? [...snapshot.value] : [],
        context: snapshot ? { ...snapshot.context } : {},
      },
      event,
      headers: request.headers,
      abort(status: number, message?: string): never {
        throw new HttpError(status, message ?? '');
      },
    });
    const preId = instance.kind === 'stateless' ? null : instance.id;
    if (action?.before) await action.before(hookArgs(pre, preId));

    // 5. Send.
    let snapshot: MachineSnapshot;
    let kept: StoredScenario | null = null;
    let reached: MachineSnapshot | undefined;
    try {
      const options = scenario === undefined ? undefined : { scenario };
      const result =
        instance.kind === 'stateless'
          ? await services.instances.sendStateless(definition, event, options)
          : await services.instances.send(definition, instance.id, event, options);
      snapshot = result.snapshot;
      kept = result.scenario ?? null;
      reached = result.forwardedChild;
    } catch (error) {
      // 6. Contention: the last committed state, isProcessing true, no hooks.
      if (error instanceof MachineAlreadyRunningException) {
        // Without a snapshot on the exception (the store could not read one) nor a loaded
        // one (deferred load), read it now: the answer stays 423 / 200.
        const committed = isSnapshot(error.snapshot)
          ? error.snapshot
          : (pre ??
            (instance.kind === 'stateless'
              ? null
              : await services.instances.restore(definition, instance.id).catch(() => null)));
        if (committed === null) throw error;
        const keptNow =
          scenarios === undefined || instance.kind === 'stateless'
            ? null
            : await scenarios.kept(instance.id);
        return await respond(committed, isRead(request) ? 200 : 423, true, event, keptNow);
      }
      // Validation guards and scenario refusals are answered like request validation, without
      // onException.
      if (
        error instanceof MachineValidationException ||
        error instanceof ScenarioFailedException ||
        error instanceof ScenarioNotFoundException
      )
        throw error;
      // 7. onException: a response is sent as it is, null/undefined re-throws.
      if (action?.onException) {
        const handled = await action.onException(error, hookArgs(pre, preId));
        if (handled) return handled;
      }
      throw error;
    }

    // 8. after() with the post-transition state.
    if (action?.after) await action.after(hookArgs(snapshot, snapshot.id));

    // 9. Output.
    return await respond(snapshot, route.status, false, event, kept, reached);
  });
}

/** Resolves the endpoint (or forward) behind a route from the definition. */
function resolveTarget(definition: MachineDefinitionBase, route: PlannedRoute): RouteTarget {
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

/**
 * The event data of a request. GET: the query, wrapped into `payload` unless it already uses
 * the bracket form `payload[key]=`. Other methods: the JSON body `{ type?, payload? }`.
 *
 * A body `type` must name the route's event (or, on a forward, the child's): the route alone
 * decides the event, so a client cannot reach another event's handler, middleware or
 * validation by overriding it (the original let it override; reference notes §4.25).
 */
function requestData(
  request: EndpointRequest,
  eventType: string,
  acceptedTypes: readonly string[],
  scenarios: boolean,
): { payload: unknown } {
  if (isRead(request)) {
    const query = scenarios ? withoutScenarioKeys(request.query) : request.query;
    return { payload: Object.hasOwn(query, 'payload') ? query.payload : query };
  }
  const body = request.body;
  if (body === undefined) return { payload: undefined };
  // JSON `null` is a body, and not an object (docs/http.md "Bad input").
  if (!isJsonObject(body)) {
    throw new HttpError(400, 'The request body must be a JSON object: { "payload": { ... } }.');
  }
  const { type, payload } = body as { type?: unknown; payload?: unknown };
  if (type !== undefined && type !== eventType && !acceptedTypes.includes(type as string)) {
    throw new MachineValidationException(
      `The type must be '${eventType}' (the event of this route).`,
      {
        type: [`The type must be '${eventType}' (the event of this route).`],
      },
    );
  }
  return { payload };
}

function isJsonObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

/**
 * 413 when the payload, as it would be stored in the history, is over `limit` bytes: a body
 * limit bounds a request, this bounds what every accepted event keeps forever.
 */
function assertPayloadSize(payload: unknown, eventType: string, limit: number): void {
  if (payload === undefined) return;
  // Bodies and queries are depth-bounded at parse time, so serialising cannot overflow.
  if (Buffer.byteLength(JSON.stringify(payload) ?? '') > limit) {
    throw new HttpError(413, `The payload of event '${eventType}' is larger than ${limit} bytes.`);
  }
}

/** The child's context, filtered when the forward's `output` is a list of keys. */
function childOutput(
  child: MachineSnapshot,
  output: OutputDefinition | null,
): Record<string, unknown> {
  if (output?.kind !== 'keys') return { ...child.context };
  const filtered: Record<string, unknown> = {};
  for (const key of output.keys)
    if (Object.hasOwn(child.context, key)) filtered[key] = child.context[key];
  return filtered;
}

/** GET, and HEAD (which frameworks route to GET handlers), read their data from the query. */
function isRead(request: EndpointRequest): boolean {
  return request.method === 'GET' || request.method === 'HEAD';
}

function isSnapshot(value: unknown): value is MachineSnapshot {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as MachineSnapshot).id === 'string' &&
    Array.isArray((value as MachineSnapshot).value)
  );
}
