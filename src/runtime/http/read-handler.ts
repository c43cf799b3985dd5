/**
 * The handlers of read routes (`reads`) and of the state stream (`stream`): middleware, then
 * the instance's last committed state in the standard envelope. Nothing is written (no history
 * row, no lock row, no machine for a model record that has none) and the lock is never taken
 * or waited for; `isProcessing` says whether someone holds it right now.
 *
 * A read may wait: `?waitFor=<state>&timeout=<ms>` answers once the instance is in that state
 * (or in a final state, which it will never leave), or when the timeout passes, with the state
 * it is in then. The wait follows commit notices (`watchInstance`), it does not poll.
 */
import { BehaviorRegistry } from '../definition/behavior-registry.js';
import { normalizeOutput } from '../definition/build-state-tree.js';
import { IssueCollector } from '../definition/issues.js';
import type { MachineDefinitionBase, OutputDefinition } from '../definition/types.js';
import { MachineNotFoundException, MachineValidationException } from '../errors.js';
import type { AvailableEvent } from '../interpreter/types.js';
import type { InstanceRead } from '../persistence/types.js';
import { etagOf, headerOf, notModified } from './conditional.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import type { HttpServices } from './http-services.js';
import { guarded } from './responses.js';
import { defaultHttpLogger, requestLogFields } from './http-logger.js';
import { HttpError, machineEnvelope, type MachineEnvelopeData } from './response-bodies.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';
import { watchInstance } from './watch-instance.js';
import { pathParam } from './plan-route-fields.js';

/** Longest `timeout` a waiting read accepts, in milliseconds. */
export const MAX_WAIT_MS = 60_000;
/** `timeout` of a waiting read that gives none, in milliseconds. */
export const DEFAULT_WAIT_MS = 10_000;

/**
 * What a read or stream route needs besides its handler: the instance and the envelope. Both
 * answer synchronously when they need no I/O (a machineId-bound route, a machine without
 * forwards): a read takes no promise round trip it does not need.
 */
export interface ReadRoute {
  /** The instance id the request names (404 when there is none). */
  instanceId(request: EndpointRequest): string | Promise<string>;
  /** The envelope of one read, as the route's options shape it. */
  envelope(
    read: InstanceRead,
  ): { data: MachineEnvelopeData } | Promise<{ data: MachineEnvelopeData }>;
  middleware: readonly ResolvedMiddleware[];
}

/** The instance lookup and envelope of a read or stream route. */
export function readRoute<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): ReadRoute {
  const output = readOutput(definition, route);
  const binding = route.binding;
  const binder = binding.kind === 'model' ? services.models[binding.model] : undefined;
  if (binding.kind === 'model' && binder === undefined) {
    throw new Error(`Route ${route.name}: no model binder named '${binding.model}'.`);
  }
  const paramName = pathParam(binding) ?? '';
  const recordId = async (param: string): Promise<string> => {
    if (binding.kind !== 'model') return param;
    const record = await binder!.find(param);
    if (record === null || record === undefined) {
      throw new HttpError(404, `${binding.model} not found.`);
    }
    // A record without a machine has nothing to read: creating one here would be a write.
    const id = binder!.readMachineId(record, binding.attribute);
    if (!id) {
      throw new MachineNotFoundException(
        `The record of this read has no machine of '${definition.id}'.`,
        { machine: definition.id },
      );
    }
    return id;
  };
  const envelopeWith = (
    { snapshot, isProcessing }: InstanceRead,
    available: AvailableEvent[] | undefined,
  ) =>
    machineEnvelope({
      id: snapshot.id,
      state: snapshot.value,
      availableEvents: available,
      output: services.resolveOutput(definition, snapshot, output),
      isProcessing,
    });
  return {
    middleware,
    instanceId(request) {
      const param = request.params[paramName] ?? '';
      return binding.kind === 'model' ? recordId(param) : param;
    },
    envelope(read) {
      const available = route.availableEvents
        ? services.availableEvents(definition, read.snapshot, route.explainAvailableEvents)
        : undefined;
      return available instanceof Promise
        ? available.then((events) => envelopeWith(read, events))
        : envelopeWith(read, available);
    },
  };
}

/** Builds the handler of one planned read route (`route.handler === 'read'`). */
export function createReadHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const read = readRoute(definition, route, middleware, services);
  /**
   * The answer of one read: with the `ETag` of the version it shows, or a 304 when the
   * request's `If-None-Match` names that version already (no envelope is built). An answer
   * while a lock is held (`isProcessing: true`) has no tag and is never a 304.
   */
  const respond = (
    current: InstanceRead,
    request: EndpointRequest,
  ): EndpointResponse | Promise<EndpointResponse> => {
    const etag = current.isProcessing ? undefined : etagOf(current.snapshot);
    if (etag !== undefined && notModified(headerOf(request, 'if-none-match'), etag)) {
      return { status: 304, body: undefined, headers: { etag } };
    }
    const headers = etag === undefined ? undefined : { etag };
    const body = read.envelope(current);
    return body instanceof Promise
      ? body.then((envelope) => answer(route.status, envelope, headers))
      : answer(route.status, body, headers);
  };

  return guarded(route, services.logger, async (request) => {
    if (middleware.length > 0) {
      const shortCircuit = await runMiddleware(middleware, request);
      if (shortCircuit) return shortCircuit;
    }
    const wait = waitOptions(definition, request.query);
    const named = read.instanceId(request);
    const id = typeof named === 'string' ? named : await named;
    if (wait === null) return respond(await services.instances.read(definition, id), request);

    let settle: (current: InstanceRead) => void = () => {};
    const settled = new Promise<InstanceRead>((resolve) => (settle = resolve));
    const reached = (current: InstanceRead): boolean =>
      current.snapshot.status === 'done' ||
      current.snapshot.value.some(
        (state) => state === wait.state || state.startsWith(`${wait.state}.`),
      );
    const watch = await watchInstance(
      services.instances,
      definition,
      id,
      (current) => {
        if (reached(current)) settle(current);
      },
      (error) =>
        (services.logger ?? request.log ?? defaultHttpLogger).error(
          'waitFor: reading a committed state failed',
          { error, route: route.name, ...requestLogFields(request) },
        ),
    );
    if (reached(watch.first)) {
      watch.stop();
      return await respond(watch.first, request);
    }
    const timer = setTimeout(() => {
      // The timeout answers the state the instance is in now.
      services.instances.read(definition, id).then(settle, () => settle(watch.first));
    }, wait.timeoutMs);
    try {
      return await respond(await settled, request);
    } finally {
      clearTimeout(timer);
      watch.stop();
    }
  });
}

function answer(
  status: number,
  body: unknown,
  headers: Record<string, string> | undefined,
): EndpointResponse {
  return headers === undefined ? { status, body } : { status, body, headers };
}

/** `waitFor` and `timeout` of a read's query, validated; `null` when the read does not wait. */
function waitOptions(
  definition: MachineDefinitionBase,
  query: Record<string, unknown>,
): { state: string; timeoutMs: number } | null {
  const waitFor = query['waitFor'];
  const timeout = query['timeout'];
  if (waitFor === undefined) {
    if (timeout !== undefined) invalid('timeout', `'timeout' needs 'waitFor'.`);
    return null;
  }
  if (typeof waitFor !== 'string' || waitFor === '') {
    invalid('waitFor', `'waitFor' must be a state id, e.g. ${definition.id}.done.`);
  }
  // `submitted` and `order.submitted` name the same state (the original's State::matches).
  const state = waitFor.startsWith(`${definition.id}.`) ? waitFor : `${definition.id}.${waitFor}`;
  const states = (definition as { idMap?: ReadonlyMap<string, unknown> }).idMap;
  if (states !== undefined && !states.has(state)) {
    invalid('waitFor', `'waitFor' names no state of machine '${definition.id}': ${waitFor}.`);
  }
  let timeoutMs = DEFAULT_WAIT_MS;
  if (timeout !== undefined) {
    timeoutMs = typeof timeout === 'string' && /^\d+$/.test(timeout) ? Number(timeout) : NaN;
    if (!(timeoutMs <= MAX_WAIT_MS)) {
      invalid(
        'timeout',
        `'timeout' must be a whole number of milliseconds from 0 to ${MAX_WAIT_MS}.`,
      );
    }
  }
  return { state, timeoutMs };
}

function invalid(field: string, message: string): never {
  throw new MachineValidationException(message, { [field]: [message] });
}

/** The read's output as the interpreter runs it: a behavior is looked up in `behavior.outputs`. */
function readOutput(
  definition: MachineDefinitionBase,
  route: PlannedRoute,
): OutputDefinition | null {
  const output = route.output;
  if (output.kind === 'default') return null;
  if (output.kind === 'keys') return { kind: 'keys', keys: output.keys };
  const issues = new IssueCollector(definition.id, undefined);
  const registry = new BehaviorRegistry(definition.id, definition.behavior, issues);
  const resolved = normalizeOutput(output.name, registry, { path: '', key: 'output' });
  if (resolved === null) {
    throw new Error(
      `Route ${route.name}: output behavior '${output.name}' is not in the behavior 'outputs' of machine '${definition.id}': plan it from this definition with planRoutes().`,
    );
  }
  return resolved;
}
