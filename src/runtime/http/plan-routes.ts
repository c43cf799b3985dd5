/**
 * `planRoutes`: the route table of one registration, as plain data. Pure, and shared by
 * `MachineRouter.register` (which mounts it) and the generator (which emits code from it), so
 * both produce the same routes by construction.
 */
import { contentionProblem, contentionWaitMs } from '../definition/contention.js';
import { checkCollisions } from './plan-collisions.js';
import { planCallbackRoutes } from './plan-callbacks.js';
import { planCreateOrSend } from './plan-create-or-send.js';
import { planFlow } from './plan-flow.js';
import { planIdempotency } from './plan-idempotency.js';
import { endpointFields, endpointHandler, pathFor } from './plan-route-fields.js';
import { throwIfAny, type MachineRoutesError } from '../errors.js';
import type { EndpointDefinition, ForwardDefinition } from '../definition/types.js';
import type { EndpointActionDefinition } from '../definition/endpoint-config.js';
import type { PlannedRoute, RegistrationOptions, RouteBinding } from './types.js';
import { normalizeReads } from './plan-reads.js';
import { routeAnswers, type RouteAnswers } from './plan-route-answers.js';
import { createRouteNameFor, readRouteNameFor, routeNameFor } from '../definition/uri.js';
import { KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import { planningContext, type PlannableDefinition, type PlanningContext } from './plan-context.js';
import type { PlannedIdempotency } from './plan-idempotency.js';
import type { PlannedCreateOrSend } from './plan-create-or-send.js';
import type { ReadSpec } from './plan-reads.js';

// The registration keys the router knows are exactly the keys of RegistrationOptions.
true satisfies ExactKeys<RegistrationOptions, typeof KNOWN_KEYS.registration>;

export { DEFAULT_IDEMPOTENCY_TTL } from './plan-idempotency.js';

export type { PlannableDefinition } from './plan-context.js';

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
  const context = planningContext(definition, options);
  const { name, prefix, issues, fail } = context;

  const keyed = planCreateOrSend(options.createOrSend, issues, {
    ...{ machineId: definition.id, registration: name, endpoints: definition.endpoints },
    ...{ kept: context.keptEndpoints, forwarded: context.forwardTypes },
    ...{ machineIdFor: context.machineIdFor, modelFor: context.modelFor },
  });
  const idempotency = planIdempotency(options.idempotency, context.available, fail);
  const contentionIssue = contentionProblem(options.contention);
  if (contentionIssue !== null) fail(`'contention' ${contentionIssue}.`, 'contention');
  const defaultWaitMs = contentionIssue === null ? (contentionWaitMs(options.contention) ?? 0) : 0;

  // R1-R4: reads (independent of only/except; planned after the forwards).
  const reads = normalizeReads(options.reads, definition.behavior ?? {}, (message, key) =>
    fail(message, key),
  );

  if (prefix === null) return { routes: [], issues };
  const routing: RoutingContext = { ...context, prefix };

  const routes = [
    ...commandRoutes(routing, keyed),
    ...readRoutes(routing, reads),
    ...streamRoutes(routing),
  ];

  // Callback URLs and inbound webhooks: after the frontend's routes (third parties call them).
  for (const route of planCallbackRoutes(options, issues, {
    ...{ machineId: definition.id, registration: name, prefix, middleware: context.middleware },
    ...{ endpoints: definition.endpoints, kept: context.keptEndpoints, createOrSend: keyed },
  })) {
    routes.push(
      planned(
        route,
        route.endpointIndex === null ? null : definition.endpoints[route.endpointIndex]!.action,
      ),
    );
  }

  setContention(routes, definition, defaultWaitMs);
  if (idempotency !== null) setIdempotency(routes, idempotency);
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

/** The planning context once the prefix is known to be valid (routes are planned). */
type RoutingContext = PlanningContext & { prefix: string };

/** A route with what it answers (data source, guards, error statuses) filled in. */
function planned(
  route: Omit<PlannedRoute, keyof RouteAnswers>,
  action: EndpointActionDefinition | null,
): PlannedRoute {
  return { ...route, ...routeAnswers(route, action) };
}

/** The create route (`create: true`), then the kept endpoints and forwards in definition order. */
function commandRoutes(context: RoutingContext, keyed: PlannedCreateOrSend | null): PlannedRoute[] {
  const { definition, options, name, prefix, middleware, machineIdFor, modelFor } = context;
  const { modelBinding } = context;
  const base = { registration: name, machineId: definition.id };
  const routes: PlannedRoute[] = [];
  if (options.create === true) {
    routes.push(
      planned(
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
      ),
    );
  }
  definition.endpoints.forEach((endpoint: EndpointDefinition, index) => {
    const type = endpoint.eventType;
    if (!context.isKept(type)) return;
    const binding: RouteBinding = machineIdFor.includes(type)
      ? { kind: 'machineId', param: 'machineId' }
      : modelFor.includes(type) && modelBinding !== null
        ? modelBinding
        : keyed?.events.includes(type)
          ? { kind: 'key', field: keyed.key }
          : { kind: 'none' };
    routes.push(
      planned(
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
      ),
    );
  });
  definition.forwards.forEach((forward: ForwardDefinition, index) => {
    const type = forward.parentEventType;
    if (!context.isKept(type)) return;
    // Forwards inherit the registration's binding: model-bound iff model and attribute are set.
    const binding = instanceBinding(context);
    routes.push(
      planned(
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
      ),
    );
  });
  return routes;
}

/**
 * How forwards, reads and the state stream bind: by model when the registration has one, else
 * by machine id.
 */
function instanceBinding(context: RoutingContext): RouteBinding {
  return context.modelBinding ?? { kind: 'machineId', param: 'machineId' };
}

/** One GET route per read (`reads`), in their order. */
function readRoutes(context: RoutingContext, reads: readonly ReadSpec[]): PlannedRoute[] {
  const { definition, name, prefix, middleware } = context;
  const binding = instanceBinding(context);
  return reads.map((read) =>
    planned(
      {
        registration: name,
        machineId: definition.id,
        name: readRouteNameFor(name, read.name),
        method: 'GET',
        path: pathFor(prefix, binding, read.uri),
        handler: 'read',
        eventType: null,
        read: read.name,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding,
        middleware: [...middleware, ...read.middleware],
        output: read.output,
        action: null,
        status: read.status,
        availableEvents: read.availableEvents,
      },
      null,
    ),
  );
}

/** The state stream's route (`stream: true`), if any. */
function streamRoutes(context: RoutingContext): PlannedRoute[] {
  const { definition, options, name, prefix, middleware } = context;
  if (options.stream !== undefined && typeof options.stream !== 'boolean') {
    context.fail(`'stream' must be true or false.`, 'stream');
    return [];
  }
  if (options.stream !== true) return [];
  const binding = instanceBinding(context);
  return [
    planned(
      {
        registration: name,
        machineId: definition.id,
        name: `${name}.events`,
        method: 'GET',
        path: pathFor(prefix, binding, '/events'),
        handler: 'events',
        eventType: null,
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding,
        middleware: [...middleware],
        output: { kind: 'default' },
        action: null,
        status: 200,
        availableEvents: true,
      },
      null,
    ),
  ];
}

/** Contention: only routes that send to an existing instance can meet a held lock. */
function setContention(
  routes: PlannedRoute[],
  definition: PlannableDefinition,
  defaultWaitMs: number,
): void {
  for (const route of routes) {
    if (route.webhook !== undefined) {
      // A webhook sends its events to instances as their routes do: the longest wait of them.
      const waits = route.webhook.events.map(
        ({ endpointIndex }) =>
          contentionWaitMs(definition.endpoints[endpointIndex]?.contention) ?? defaultWaitMs,
      );
      const waitMs = Math.max(0, ...waits);
      if (waitMs > 0) route.contention = { waitMs };
      continue;
    }
    if (route.endpointIndex === null || route.binding.kind === 'none') continue;
    const own =
      route.childEventType === null
        ? definition.endpoints[route.endpointIndex]?.contention
        : definition.forwards[route.endpointIndex]?.contention;
    const waitMs = contentionWaitMs(own) ?? defaultWaitMs;
    if (waitMs > 0) route.contention = { waitMs };
  }
}

/** The Idempotency-Key settings on the command routes `idempotency` covers. */
function setIdempotency(routes: PlannedRoute[], idempotency: PlannedIdempotency): void {
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
