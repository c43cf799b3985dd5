/**
 * `planRoutes`: the route table of one registration, as plain data. Pure, and shared by
 * `MachineRouter.register` (which mounts it) and the generator (which emits code from it), so
 * both produce the same routes by construction.
 */
import { contentionProblem, contentionWaitMs } from '../definition/contention.js';
import { eventTypeOfReference } from '../definition/endpoints.js';
import { checkCollisions } from './plan-collisions.js';
import { planCallbackRoutes } from './plan-callbacks.js';
import { planCreateOrSend } from './plan-create-or-send.js';
import { planFlow } from './plan-flow.js';
import { planIdempotency } from './plan-idempotency.js';
import { endpointFields, endpointHandler, pathFor } from './plan-route-fields.js';
import { InvalidRouterConfigException, throwIfAny, type MachineRoutesError } from '../errors.js';
import type {
  EndpointDefinition,
  EventReference,
  ForwardDefinition,
  MachineDefinitionBase,
} from '../definition/types.js';
import type { EndpointActionDefinition } from '../definition/endpoint-config.js';
import type { PlannedRoute, RegistrationOptions, RouteBinding } from './types.js';
import { normalizeReads } from './plan-reads.js';
import { routeAnswers, type RouteAnswers } from './plan-route-answers.js';
import {
  createRouteNameFor,
  modelParamName,
  normalizePrefix,
  readRouteNameFor,
  routeNameFor,
} from '../definition/uri.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';

// The registration keys the router knows are exactly the keys of RegistrationOptions.
true satisfies ExactKeys<RegistrationOptions, typeof KNOWN_KEYS.registration>;

export { DEFAULT_IDEMPOTENCY_TTL } from './plan-idempotency.js';

/** What planning reads of a machine definition. */
export type PlannableDefinition = Pick<MachineDefinitionBase, 'id' | 'endpoints' | 'forwards'> &
  /** Read outputs name behaviors of `behavior.outputs`; `flow`'s `inState` a state of `config`. */
  Partial<Pick<MachineDefinitionBase, 'behavior' | 'config'>>;

/** The routes of a registration and every problem found while planning them. */
export interface RegistrationPlan {
  routes: PlannedRoute[];
  issues: MachineRoutesError[];
}

/**
 * Plans the routes of one registration, in the spec's order: create, endpoints (in
 * definition order), forwarded endpoints, reads (`reads`, in their order), then the state
 * stream (`stream: true`). Throws `InvalidRouterConfigException` (or an
 * aggregate of all of them) when the options break a rule of "Filtering and validation".
 *
 * The result is JSON-serializable: zod schemas, actions and output behaviors are referenced
 * by `endpointIndex` and resolved from the definition by the handler.
 */
export function planRoutes(
  definition: PlannableDefinition,
  options: RegistrationOptions,
): PlannedRoute[] {
  const plan = planRegistration(definition, options);
  throwIfAny(plan.issues);
  return plan.routes;
}

/** {@link planRoutes} without throwing: the routes that could be planned plus the issues. */
export function planRegistration(
  definition: PlannableDefinition,
  options: RegistrationOptions,
): RegistrationPlan {
  const issues: MachineRoutesError[] = [];
  const validName = typeof options.name === 'string' && /^[A-Za-z0-9_.-]+$/.test(options.name);
  const name = validName ? (options.name as string) : definition.id;
  const where = `(machine '${definition.id}', registration '${name}')`;
  const fail = (message: string, key: string): void => {
    issues.push(
      new InvalidRouterConfigException(`MachineRouter: ${message} ${where}`, {
        machine: definition.id,
        registration: name,
        key,
      }),
    );
  };

  for (const unknown of findUnknownKeys(options, KNOWN_KEYS.registration)) {
    fail(
      `${describeUnknownKey(unknown)} in the registration options. Known keys: ${KNOWN_KEYS.registration.join(', ')}.`,
      unknown.key,
    );
  }
  const prefix = normalizePrefix(options.prefix);
  if (prefix === null) {
    fail(
      options.prefix === undefined || options.prefix === ''
        ? `'prefix' is required, e.g. { prefix: '${definition.id}s' }.`
        : `invalid 'prefix' '${String(options.prefix)}': use path segments of letters, digits, '-', '_', '.' and '~' (no parameters, query or spaces).`,
      'prefix',
    );
  }
  if (options.name !== undefined && !validName) {
    fail(
      `invalid 'name' '${String(options.name)}': use letters, digits, '_', '.' and '-'.`,
      'name',
    );
  }

  const endpointTypes = definition.endpoints.map((endpoint) => endpoint.eventType);
  const forwardTypes = definition.forwards.map((forward) => forward.parentEventType);
  const available = [...endpointTypes, ...forwardTypes];
  const list = (key: 'only' | 'except' | 'machineIdFor' | 'modelFor'): string[] | null => {
    const value = options[key] as readonly EventReference[] | null | undefined;
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value)) {
      fail(`'${key}' must be a list of event types or event definitions.`, key);
      return [];
    }
    const types: string[] = [];
    for (const ref of value as readonly unknown[]) {
      const type = eventTypeOfReference(ref);
      if (type === null)
        fail(`'${key}' has an entry that is not an event type or event definition.`, key);
      else types.push(type);
    }
    return types;
  };
  const only = list('only');
  const except = list('except');
  const machineIdFor = list('machineIdFor') ?? [];
  const modelFor = list('modelFor') ?? [];
  const middleware: readonly string[] = Array.isArray(options.middleware) ? options.middleware : [];
  if (
    (options.middleware !== undefined && !Array.isArray(options.middleware)) ||
    !middleware.every((entry) => typeof entry === 'string' && entry !== '')
  ) {
    fail(`'middleware' must be a list of middleware names, e.g. ['auth:api'].`, 'middleware');
  }

  // R6-R7: filtering.
  if (only !== null && except !== null) {
    fail(`'only' and 'except' cannot be used together. Keep one of them.`, 'only');
  }
  for (const [key, types] of [
    ['only', only],
    ['except', except],
  ] as const) {
    const unknown = (types ?? []).filter((type) => !available.includes(type));
    if (unknown.length > 0) {
      fail(
        `unknown event types in '${key}': ${unknown.join(', ')}. Available: ${available.join(', ') || '(none)'}.`,
        key,
      );
    }
  }
  const filter: 'only' | 'except' | null =
    only !== null ? 'only' : except !== null ? 'except' : null;
  const isKept = (type: string): boolean =>
    only !== null ? only.includes(type) : except !== null ? !except.includes(type) : true;

  // R9-R12: binding lists reference kept, non-forwarded endpoints.
  const keptEndpoints = endpointTypes.filter(isKept);
  for (const [key, types] of [
    ['machineIdFor', machineIdFor],
    ['modelFor', modelFor],
  ] as const) {
    const forwarded = types.filter((type) => forwardTypes.includes(type));
    if (forwarded.length > 0) {
      fail(
        `'${key}' cannot reference forwarded endpoints (they inherit binding mode from parent model config): ${forwarded.join(', ')}. Remove them from '${key}'.`,
        key,
      );
    }
    const missing = types.filter(
      (type) => !forwardTypes.includes(type) && !keptEndpoints.includes(type),
    );
    if (missing.length > 0) {
      const filteredOut = missing.every((type) => endpointTypes.includes(type));
      const hint =
        filteredOut && filter === 'only'
          ? ` (filtered by 'only'). Remove from '${key}' or add to 'only'.`
          : filteredOut && filter === 'except'
            ? ` (filtered by 'except'). Remove from '${key}' or adjust 'except'.`
            : `. Available: ${keptEndpoints.join(', ') || '(none)'}.`;
      fail(
        `'${key}' references event types not in the registered endpoint set: ${missing.join(', ')}${hint}`,
        key,
      );
    }
  }
  // R13-R14.
  const hasModel = typeof options.model === 'string' && options.model !== '';
  const hasAttribute = typeof options.attribute === 'string' && options.attribute !== '';
  if (modelFor.length > 0 && (!hasModel || !hasAttribute)) {
    fail(
      `'model' and 'attribute' are required when 'modelFor' is set, e.g. { model: 'Order', attribute: 'machine_id' }.`,
      'model',
    );
  }
  if (hasModel && modelParamName(options.model as string) === '') {
    fail(`invalid 'model' '${String(options.model)}': use a name such as 'Order'.`, 'model');
  }
  const overlap = machineIdFor.filter((type) => modelFor.includes(type));
  if (overlap.length > 0) {
    fail(
      `events cannot be in both 'machineIdFor' and 'modelFor': ${overlap.join(', ')}. Keep each in one list.`,
      'machineIdFor',
    );
  }

  const keyed = planCreateOrSend(options.createOrSend, issues, {
    ...{ machineId: definition.id, registration: name, endpoints: definition.endpoints },
    ...{ kept: keptEndpoints, forwarded: forwardTypes, machineIdFor, modelFor },
  });
  const idempotency = planIdempotency(options.idempotency, available, fail);
  const contentionIssue = contentionProblem(options.contention);
  if (contentionIssue !== null) fail(`'contention' ${contentionIssue}.`, 'contention');
  const defaultWaitMs = contentionIssue === null ? (contentionWaitMs(options.contention) ?? 0) : 0;

  // R1-R4: reads (independent of only/except; planned after the forwards).
  const reads = normalizeReads(options.reads, definition.behavior ?? {}, (message, key) =>
    fail(message, key),
  );

  if (prefix === null) return { routes: [], issues };

  // Planning.
  const modelBinding: RouteBinding | null =
    hasModel && hasAttribute
      ? {
          kind: 'model',
          param: modelParamName(options.model as string),
          model: options.model as string,
          attribute: options.attribute as string,
        }
      : null;
  const routes: PlannedRoute[] = [];
  const add = (
    route: Omit<PlannedRoute, keyof RouteAnswers>,
    action: EndpointActionDefinition | null,
  ): void => {
    routes.push({ ...route, ...routeAnswers(route, action) });
  };
  const base = { registration: name, machineId: definition.id };
  if (options.create === true) {
    add(
      {
        ...base,
        name: createRouteNameFor(name),
        method: 'POST',
        path: `${prefix}/create`,
        handler: 'create',
        eventType: null,
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding: { kind: 'none' },
        middleware: [...middleware],
        output: { kind: 'default' },
        action: null,
        status: 201,
        availableEvents: false,
      },
      null,
    );
  }
  definition.endpoints.forEach((endpoint: EndpointDefinition, index) => {
    const type = endpoint.eventType;
    if (!isKept(type)) return;
    const binding: RouteBinding = machineIdFor.includes(type)
      ? { kind: 'machineId', param: 'machineId' }
      : modelFor.includes(type) && modelBinding !== null
        ? modelBinding
        : keyed?.events.includes(type)
          ? { kind: 'key', field: keyed.key }
          : { kind: 'none' };
    add(
      {
        ...base,
        ...endpointFields(endpoint, middleware),
        name: routeNameFor(name, type),
        path: pathFor(prefix, binding, endpoint.uri),
        handler: endpointHandler(binding),
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: index,
        binding,
      },
      endpoint.action,
    );
  });
  definition.forwards.forEach((forward: ForwardDefinition, index) => {
    const type = forward.parentEventType;
    if (!isKept(type)) return;
    // Forwards inherit the registration's binding: model-bound iff model and attribute are set.
    const binding: RouteBinding = modelBinding ?? { kind: 'machineId', param: 'machineId' };
    add(
      {
        ...base,
        ...endpointFields({ ...forward, eventType: type }, middleware),
        name: routeNameFor(name, type),
        path: pathFor(prefix, binding, forward.uri),
        handler: binding.kind === 'model' ? 'forwardedModelBound' : 'forwardedMachineIdBound',
        read: null,
        childEventType: forward.childEventType,
        childMachineId: forward.childMachineId,
        endpointIndex: index,
        binding,
      },
      forward.action,
    );
  });

  // Reads and the state stream bind like forwards: by model when the registration has one,
  // else by machine id.
  const readBinding: RouteBinding = modelBinding ?? { kind: 'machineId', param: 'machineId' };
  for (const read of reads) {
    add(
      {
        ...base,
        name: readRouteNameFor(name, read.name),
        method: 'GET',
        path: pathFor(prefix, readBinding, read.uri),
        handler: 'read',
        eventType: null,
        read: read.name,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding: readBinding,
        middleware: [...middleware, ...read.middleware],
        output: read.output,
        action: null,
        status: read.status,
        availableEvents: read.availableEvents,
      },
      null,
    );
  }

  if (options.stream !== undefined && typeof options.stream !== 'boolean') {
    fail(`'stream' must be true or false.`, 'stream');
  } else if (options.stream === true) {
    add(
      {
        ...base,
        name: `${name}.events`,
        method: 'GET',
        path: pathFor(prefix, readBinding, '/events'),
        handler: 'events',
        eventType: null,
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding: readBinding,
        middleware: [...middleware],
        output: { kind: 'default' },
        action: null,
        status: 200,
        availableEvents: true,
      },
      null,
    );
  }

  // Callback URLs and inbound webhooks: after the frontend's routes (third parties call them).
  for (const route of planCallbackRoutes(options, issues, {
    ...{ machineId: definition.id, registration: name, prefix, middleware },
    ...{ endpoints: definition.endpoints, kept: keptEndpoints, createOrSend: keyed },
  })) {
    add(
      route,
      route.endpointIndex === null ? null : definition.endpoints[route.endpointIndex]!.action,
    );
  }

  // Contention: only routes that send to an existing instance can meet a held lock.
  for (const route of routes) {
    if (route.endpointIndex === null || route.binding.kind === 'none') continue;
    const own =
      route.childEventType === null
        ? definition.endpoints[route.endpointIndex]?.contention
        : definition.forwards[route.endpointIndex]?.contention;
    const waitMs = contentionWaitMs(own) ?? defaultWaitMs;
    if (waitMs > 0) route.contention = { waitMs };
  }

  if (idempotency !== null) {
    for (const route of routes) {
      // Callback and webhook routes dedupe by their token and delivery id instead.
      if (route.method === 'GET' || route.handler === 'read') continue;
      if (route.handler === 'callback' || route.handler === 'webhook') continue;
      const listed =
        idempotency.events === null
          ? true
          : route.eventType !== null && idempotency.events.includes(route.eventType);
      if (listed) route.idempotency = { ...idempotency.route };
    }
  }

  if (
    options.explainAvailableEvents !== undefined &&
    typeof options.explainAvailableEvents !== 'boolean'
  ) {
    fail(`'explainAvailableEvents' must be true or false.`, 'explainAvailableEvents');
  } else if (options.explainAvailableEvents === true) {
    for (const route of routes) if (route.availableEvents) route.explainAvailableEvents = true;
  }

  planFlow(
    options.flow,
    routes,
    { machine: definition.id, registration: name },
    issues,
    definition.config?.states,
  );
  checkCollisions(routes, prefix, fail);
  return { routes, issues };
}
