/**
 * `MachineRouter`: registrations in, a framework-neutral route table out. Adapters
 * (`mountFastify`, `mountExpress`) mount its routes; generated code mounts pre-planned routes
 * through the same object, so both paths share one lifecycle.
 */
import { throwIfAny } from '../errors.js';
import {
  activeScenario,
  availableEvents,
  availableScenarios,
  explainAvailableEvents,
  findScenario,
  initialize,
  resolveOutput,
} from '../interpreter/index.js';
import type { MachineDefinition } from '../definition/index.js';
import type { AvailableEvent, MachineSnapshot } from '../interpreter/index.js';
import type { MachineInstances } from '../engine/machine-instances.js';
import type { AvailableEventsReadOptions } from '../persistence/types.js';
import type { MiddlewareRegistry } from './middleware-registry.js';
import { forwardedOutput } from './forwarded-output.js';
import { PathMethods, pathShape } from './instance-surface.js';
import { createOptionsHandler } from './options-handler.js';
import { planOptionsRoutes, type OptionsRoute } from './plan-options.js';
import { planRegistration } from './plan-routes.js';
import { createRouteHandler, type HttpServices } from './request-lifecycle.js';
import type { ScenarioServices } from './scenario-fields.js';
import { DEFAULT_BODY_LIMIT, DEFAULT_PAYLOAD_LIMIT } from './request-parsing.js';
import type {
  HttpLogger,
  ModelBinder,
  PlannedRoute,
  RegistrationOptions,
  RouteHandler,
} from './types.js';
import { validateRouteNames } from './validate-registration.js';
import { hasPinnedVersions, pinnedOnlyRoutes, versionedHandler } from './versioned-routes.js';

const EXPLAIN: AvailableEventsReadOptions = Object.freeze({ explain: true });

/** The instance's own available events (no children to read), explained when asked. */
function localAvailableEvents(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  explain: boolean | undefined,
): AvailableEvent[] {
  const events = availableEvents(definition, snapshot);
  return explain === true ? explainAvailableEvents(definition, snapshot, events) : events;
}

/** Options of a {@link MachineRouter}. */
export interface MachineRouterOptions {
  /** Runs and persists instances (`MachineRuntime` of the persistence module). */
  runtime: MachineInstances<MachineDefinition>;
  /** Middleware by name; `auth:admin` runs the `auth` entry with `['admin']`. */
  middleware?: MiddlewareRegistry;
  /** Model binders by model name (the registrations' `model` option). */
  models?: Readonly<Record<string, ModelBinder>>;
  /**
   * Where unexpected errors are logged (their details never reach the response). Default: the
   * framework's logger of each request (Fastify's `request.log`, pino-http's `req.log`).
   */
  logger?: HttpLogger;
  /** Largest accepted request body in bytes (default 1 MiB); larger ones get 413. */
  bodyLimit?: number;
  /**
   * Largest event payload in bytes, as stored in the history (serialised JSON), for events
   * that set no `payloadLimit` of their own (default 64 KiB); larger ones get 413.
   */
  payloadLimit?: number;
  /**
   * Finds the running child a forwarded event reached, for `data.child` of forwarded
   * responses. Default: the runtime's `forwardedChild` (MachineRuntime reads `machine_children`).
   */
  forwardedChild?: HttpServices<MachineDefinition>['forwardedChild'];
  /**
   * Event routes read `scenario` / `scenarioParams` and answer `availableScenarios` /
   * `activeScenario` (docs/scenarios.md). Default: the runtime's `scenariosEnabled`
   * (`MACHINE_SCENARIOS_ENABLED`). Off, the fields are ignored and cost nothing.
   */
  scenarios?: boolean;
}

/** A planned route with its handler, ready for an adapter. */
export interface MountedRoute {
  route: PlannedRoute;
  handler: RouteHandler;
}

/** An OPTIONS route (plan-options.ts) with its handler, ready for an adapter. */
export interface MountedOptionsRoute {
  route: OptionsRoute;
  handler: RouteHandler;
}

/**
 * Registers machines and builds their handlers.
 *
 * @example
 * const router = new MachineRouter({ runtime, middleware: { auth: bearerAuth } });
 * router.register(orderMachine, { prefix: 'orders', create: true, machineIdFor: ['SUBMIT'] });
 * await mountFastify(app, router);
 */
export class MachineRouter {
  readonly bodyLimit: number;
  readonly #services: HttpServices<MachineDefinition>;
  readonly #routes: MountedRoute[] = [];
  readonly #optionsRoutes: MountedOptionsRoute[] = [];
  /** Methods mounted per path: the `Allow` of OPTIONS answers and of 409 refusals. */
  readonly #paths = new PathMethods();

  constructor(options: MachineRouterOptions) {
    this.bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
    const runtime = options.runtime;
    this.#services = {
      instances: runtime,
      // A machine without forwards has no forwarded events: answered synchronously, without
      // reading children. `explain` (explainAvailableEvents): guards evaluated, forwarded
      // entries against the child.
      availableEvents: (definition, snapshot, explain) =>
        definition.forwards.length === 0
          ? localAvailableEvents(definition, snapshot, explain)
          : runtime.availableEvents(definition, snapshot, explain ? EXPLAIN : undefined),
      forwardedOutput: (definition, snapshot, forward, child, event) =>
        forwardedOutput(definition, snapshot, forward, child, event),
      resolveOutput: (definition, snapshot, output, event) =>
        resolveOutput(definition, snapshot, output, event === undefined ? {} : { event }),
      initialSnapshot: (definition) => initialize(definition).snapshot,
      forwardedChild:
        options.forwardedChild ??
        ((definition, parent, forward) => runtime.forwardedChild(definition, parent, forward)),
      middleware: options.middleware ?? {},
      models: options.models ?? {},
      logger: options.logger,
      payloadLimit: options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT,
      idempotencyKeys: runtime.idempotencyKeys,
      ...(runtime.flowControl === undefined ? {} : { flowControl: runtime.flowControl }),
      paths: this.#paths,
      ...((options.scenarios ?? runtime.scenariosEnabled)
        ? { scenarios: scenarioServices(runtime) }
        : {}),
    };
  }

  /** Every mounted route, in registration order. */
  get routes(): readonly MountedRoute[] {
    return this.#routes;
  }

  /**
   * The OPTIONS routes of the mounted paths (docs/http.md "OPTIONS, Allow and
   * Machine-Events"): one per path, in mount order. Adapters mount them beside {@link routes}.
   */
  get optionsRoutes(): readonly MountedOptionsRoute[] {
    return this.#optionsRoutes;
  }

  /**
   * Plans one registration with `planRoutes`, validates it (rule 5 of "Filtering and
   * validation", unknown middleware and models) and adds its routes. Every problem is
   * collected and thrown once: `InvalidRouterConfigException`, or an aggregate of them.
   * Returns the planned routes (the same table `planRoutes` gives the generator).
   */
  register(machine: MachineDefinition, options: RegistrationOptions): PlannedRoute[] {
    const plan = planRegistration(machine, options);
    throwIfAny([...plan.issues, ...validateRouteNames(plan.routes, options, this.#context())]);
    this.mount(machine, plan.routes);
    this.mountPinnedRoutes(machine, options);
    return plan.routes;
  }

  /**
   * Adds the routes of events only a pinned older version of `machine` takes (docs/versioning.md
   * "HTTP"), for the registration `options`: bound by machine id, they serve only instances of
   * that version. They are not in the route table `planRoutes` returns, which the generator and
   * the OpenAPI document describe (the newest version). `register` calls it; the generated app,
   * which `mount`s the generated (newest) route tables, calls it for each registration of its
   * config. A route already mounted (by name, or by method and path) is not added twice.
   * Returns the routes added (none for a machine without pinned versions).
   */
  mountPinnedRoutes(machine: MachineDefinition, options: RegistrationOptions): PlannedRoute[] {
    if (!hasPinnedVersions(machine)) return [];
    const newest = planRegistration(machine, options).routes;
    const mounted = new Set(
      this.#routes.flatMap(({ route }) => [route.name, `${route.method} ${route.path}`]),
    );
    const added = pinnedOnlyRoutes(machine, options, newest).filter(
      (route) => !mounted.has(route.name) && !mounted.has(`${route.method} ${route.path}`),
    );
    for (const route of added) {
      this.#routes.push({ route, handler: versionedHandler(machine, route, this.#services, null) });
      this.#paths.add(route.method, route.path);
    }
    return added;
  }

  /**
   * Adds routes planned elsewhere (generated code emits them as data). The routes must come
   * from `planRoutes(machine, ...)`; their middleware and models are checked here.
   */
  mount(machine: MachineDefinition, routes: readonly PlannedRoute[]): void {
    const issues = [...groupBy(routes, (route) => route.registration).values()].flatMap((group) => {
      const binding = group.find((route) => route.binding.kind === 'model')?.binding;
      return validateRouteNames(
        group,
        { model: binding?.kind === 'model' ? binding.model : null },
        this.#context(),
      );
    });
    throwIfAny(issues);
    for (const route of routes) {
      this.#routes.push({ route, handler: this.handlerFor(machine, route) });
      this.#paths.add(route.method, route.path);
    }
    const taken = new Set(this.#optionsRoutes.map(({ route }) => pathShape(route.path)));
    for (const route of planOptionsRoutes(routes, taken)) {
      this.#optionsRoutes.push({
        route,
        handler: createOptionsHandler(machine, route, this.#services),
      });
      this.#paths.add('OPTIONS', route.path);
    }
  }

  /**
   * Adds routes that come with their own handlers (the admin group, `mountAdminRoutes`), mounted
   * by the adapters like the machines' routes. Their handlers run their middleware themselves.
   */
  addRoutes(routes: readonly MountedRoute[]): void {
    this.#routes.push(...routes);
  }

  /** The middleware registry the router was given (names as routes reference them). */
  get middlewareRegistry(): MiddlewareRegistry {
    return this.#services.middleware;
  }

  /** The framework-neutral handler of one planned route (for generated per-route code). */
  handlerFor(machine: MachineDefinition, route: PlannedRoute): RouteHandler {
    const handler = createRouteHandler(machine, route, this.#services);
    // An instance of a pinned older version is served by its own version's endpoint.
    return hasPinnedVersions(machine)
      ? versionedHandler(machine, route, this.#services, handler)
      : handler;
  }

  #context(): { middleware: string[]; models: string[] } {
    return {
      middleware: Object.keys(this.#services.middleware),
      models: Object.keys(this.#services.models),
    };
  }
}

/** Scenario rules of the interpreter, and what the runtime keeps, for the request lifecycle. */
function scenarioServices(
  runtime: MachineInstances<MachineDefinition>,
): ScenarioServices<MachineDefinition> {
  return {
    find: (definition, slug) => void findScenario(definition, slug),
    available: availableScenarios,
    active: activeScenario,
    kept: (id) => runtime.keptScenario(id),
  };
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
