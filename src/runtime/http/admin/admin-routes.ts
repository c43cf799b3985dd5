/**
 * The admin route group (docs/operations.md "Admin routes"): `MachineOperations` over HTTP, and
 * the console page that drives it. Every route runs the group's middleware first; a request it
 * refuses never reaches the operations. The routes are mounted on a `MachineRouter` like the
 * machines' own (same body parsing, 404/405 answers, state streams ended at shutdown).
 *
 * The console, `GET <prefix>/console`, and each machine's diagram, `GET
 * <prefix>/console/diagram/{machine}` (SVG). JSON routes, under `<prefix>/api/machines`:
 *
 * - `GET /` the machines (states, events, cancel event);
 * - `GET /{machine}/instances` a page of instances (filters and cursor as query parameters);
 * - `GET /{machine}/instances/{id}` one instance's record; `.../history` a timeline page;
 *   `.../stream` its committed states as Server-Sent Events;
 * - `POST /{machine}/instances/{id}/{cancel|send|retry|fire|release|pause|resume}`.
 */
import { Readable } from 'node:stream';
import {
  InvalidOperationQueryException,
  MachineRoutesError,
  MachineValidationException,
  throwIfAny,
} from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import type { MachineRuntime } from '../../engine/machine-runtime.js';
import { MachineOperations } from '../../engine/operations/machine-operations.js';
import type { HttpMethod } from '../../definition/types.js';
import type { MachineRouter, MountedRoute } from '../machine-router.js';
import {
  resolveMiddleware,
  runMiddleware,
  type ResolvedMiddleware,
} from '../middleware-registry.js';
import { errorToResponse } from '../responses.js';
import { defaultHttpLogger } from '../http-logger.js';
import { errorResponse } from '../response-bodies.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from '../types.js';
import { adminPrefix, validateAdminOptions, type AdminOptions } from './admin-options.js';
import { adminRepairs } from './admin-repairs.js';
import { adminStream } from './admin-stream.js';
import { consolePage } from './console-page.js';
import { historyOptions, listOptions } from './admin-query.js';

/** What {@link mountAdminRoutes} needs besides the router. */
export interface AdminRoutesOptions {
  /** The application's runtime (its store, queue and timer registrations). */
  runtime: MachineRuntime;
  /** The machines the group answers for (every registered machine, children included). */
  machines: readonly MachineDefinition[];
  /** The runtime's timer registrations (the config's `timers`), for the pending timers shown. */
  timers?: readonly TimerRegistration[];
  admin: AdminOptions;
  /**
   * Each machine's state diagram as SVG (`diagramSvgs` of a generated `diagrams.gen.ts`), or a
   * function loading them on first use. The console draws a machine without one as a state
   * list.
   */
  diagrams?: Readonly<Record<string, string>> | (() => Promise<Readonly<Record<string, string>>>);
}

/**
 * Adds the admin routes to `router`. Throws `AdminMiddlewareRequiredException` when the group
 * names no middleware or one the router's registry lacks.
 *
 * @example mountAdminRoutes(router, { runtime, machines: [orderMachine], admin: { middleware: ['auth:admin'] } })
 */
export function mountAdminRoutes(router: MachineRouter, options: AdminRoutesOptions): void {
  const registry = router.middlewareRegistry;
  throwIfAny(
    validateAdminOptions(
      options.admin,
      Object.keys(registry),
      options.machines.map((machine) => machine.id),
    ),
  );
  const { resolved } = resolveMiddleware(options.admin.middleware, registry);
  router.addRoutes(adminRoutes(options, resolved));
}

/** The group's routes, each behind `middleware`. */
export function adminRoutes(
  options: AdminRoutesOptions,
  middleware: readonly ResolvedMiddleware[],
): MountedRoute[] {
  const prefix = adminPrefix(options.admin);
  const machines = withChildren(options.machines);
  const operations = new MachineOperations({
    runtime: options.runtime,
    machines,
    timers: options.timers ?? [],
    ...(options.admin.cancelEvents === undefined
      ? {}
      : { cancelEvents: options.admin.cancelEvents }),
  });
  const diagrams = diagramLoader(options.diagrams);
  const machinesBody = machineList(machines, options.admin.cancelEvents ?? {});
  const api = `${prefix}/api/machines`;
  const instance = `${api}/{machine}/instances/{id}`;
  const route = (
    name: string,
    method: HttpMethod,
    path: string,
    handle: (request: EndpointRequest) => Promise<EndpointResponse>,
  ): MountedRoute => {
    const planned = plannedAdminRoute(name, method, path, middleware);
    return { route: planned, handler: adminHandler(planned, middleware, handle) };
  };
  const machineOf = (request: EndpointRequest): MachineDefinition =>
    operations.machine(request.params['machine'] ?? '');
  return [
    route('console', 'GET', `${prefix}/console`, async () =>
      textAnswer('text/html; charset=utf-8', consolePage()),
    ),
    route('machines', 'GET', api, async () => ({ status: 200, body: machinesBody })),
    route('diagram', 'GET', `${prefix}/console/diagram/{machine}`, async (request) => {
      const svg = (await diagrams())[machineOf(request).id];
      if (svg === undefined) return errorResponse(404, 'No diagram was drawn for this machine.');
      return textAnswer('image/svg+xml; charset=utf-8', svg);
    }),
    route('list', 'GET', `${api}/{machine}/instances`, async (request) => ({
      status: 200,
      body: await operations.list(machineOf(request).id, listOptions(request.query)),
    })),
    route('show', 'GET', instance, async (request) => ({
      status: 200,
      body: await operations.show(machineOf(request).id, request.params['id'] ?? ''),
    })),
    route('history', 'GET', `${instance}/history`, async (request) => ({
      status: 200,
      body: await operations.history(
        machineOf(request).id,
        request.params['id'] ?? '',
        historyOptions(request.query),
      ),
    })),
    route('stream', 'GET', `${instance}/stream`, (request) =>
      adminStream(options.runtime, machineOf(request), request),
    ),
    ...adminRepairs(operations).map((repair) =>
      route(repair.action, 'POST', `${instance}/${repair.action}`, async (request) => {
        const machine = machineOf(request);
        const id = request.params['id'] ?? '';
        const result = await repair.run(machine.id, id, bodyOf(request));
        return {
          status: 200,
          body: { action: repair.action, result, instance: await operations.show(machine.id, id) },
        };
      }),
    ),
  ];
}

/** The admin routes as planned routes: what adapters mount (method and path) and list. */
function plannedAdminRoute(
  name: string,
  method: HttpMethod,
  path: string,
  middleware: readonly ResolvedMiddleware[],
): PlannedRoute {
  return {
    name: `admin.${name}`,
    registration: 'admin',
    method,
    path,
    handler: 'admin',
    machineId: '',
    eventType: null,
    read: null,
    childEventType: null,
    childMachineId: null,
    endpointIndex: null,
    binding: { kind: 'none' },
    middleware: middleware.map((entry) => entry.reference),
    output: { kind: 'default' },
    action: null,
    status: 200,
    availableEvents: false,
    payloadSource: method === 'GET' ? 'query' : 'body',
    authGuards: null,
    errorStatuses: [],
    actionStatuses: {},
  };
}

/** Middleware first, then the route; every failure becomes its JSON answer. */
function adminHandler(
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  handle: (request: EndpointRequest) => Promise<EndpointResponse>,
): RouteHandler {
  return async (request) => {
    try {
      const refused = await runMiddleware(middleware, request);
      if (refused) return refused;
      return await handle(request);
    } catch (error) {
      return adminError(error, route, request);
    }
  };
}

/**
 * The operations' refusals with their status and `code`: an unknown machine is a 404 like an
 * unknown instance; a bad query 400; a paused instance, a held lock or an event the state does
 * not take 409.
 */
function adminError(
  error: unknown,
  route: PlannedRoute,
  request: EndpointRequest,
): EndpointResponse {
  if (error instanceof InvalidOperationQueryException && error.details.key === 'machine') {
    return codedError(404, error);
  }
  if (
    error instanceof MachineRoutesError &&
    !(error instanceof MachineValidationException) &&
    [400, 409, 423].includes(error.statusCode)
  ) {
    return codedError(error.statusCode === 423 ? 409 : error.statusCode, error);
  }
  return errorToResponse(error, request.log ?? defaultHttpLogger, route.name, request);
}

function codedError(status: number, error: MachineRoutesError): EndpointResponse {
  return { status, body: { message: error.message, code: error.code } };
}

/** The request's JSON object body (none: `{}`); anything else is a 400. */
function bodyOf(request: EndpointRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidOperationQueryException(
      'An admin action takes a JSON object body ({ "who": "alice", ... }) or none.',
      { key: 'body' },
    );
  }
  return body as Record<string, unknown>;
}

/** A text body: a one-chunk stream, which both adapters send as it is (not JSON-encoded). */
function textAnswer(contentType: string, text: string): EndpointResponse {
  return {
    status: 200,
    headers: { 'content-type': contentType, 'cache-control': 'no-store' },
    body: Readable.from([Buffer.from(text)]),
  };
}

function diagramLoader(
  diagrams: AdminRoutesOptions['diagrams'],
): () => Promise<Readonly<Record<string, string>>> {
  if (typeof diagrams !== 'function') return async () => diagrams ?? {};
  let loaded: Promise<Readonly<Record<string, string>>> | null = null;
  return () =>
    (loaded ??= diagrams().catch((error: unknown) => {
      loaded = null;
      throw error;
    }));
}

/**
 * The machines and every child machine they start (as the runtime registers them), so that an
 * operator can open a child instance from its parent's page.
 */
function withChildren(machines: readonly MachineDefinition[]): MachineDefinition[] {
  const found = new Map<string, MachineDefinition>();
  const visit = (machine: MachineDefinition): void => {
    if (found.has(machine.id)) return;
    found.set(machine.id, machine);
    for (const node of machine.idMap.values()) {
      const child = node.invocation?.machine;
      if (child !== undefined && typeof child !== 'string') visit(child);
    }
  };
  machines.forEach(visit);
  return [...found.values()];
}

/** One machine as the console lists it. */
export interface AdminMachine {
  id: string;
  /** Every state: full id, type, parent's full id (`null` for the root's children). */
  states: { id: string; type: string; parent: string | null }[];
  /** Event types the machine's states accept. */
  events: string[];
  /** The event `cancel` sends without one named, `null` when none is configured. */
  cancelEvent: string | null;
}

function machineList(
  machines: readonly MachineDefinition[],
  cancelEvents: Readonly<Record<string, string>>,
): { machines: AdminMachine[] } {
  return {
    machines: [...machines]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((machine) => {
        const nodes = [...machine.idMap.values()].filter((node) => node.parent !== null);
        const events = new Set(nodes.flatMap((node) => [...node.availableTypes]));
        return {
          id: machine.id,
          states: nodes
            .sort((a, b) => a.order - b.order)
            .map((node) => ({
              id: node.id,
              type: node.type,
              parent: node.parent?.parent === null ? null : (node.parent?.id ?? null),
            })),
          events: [...events].sort(),
          cancelEvent: cancelEvents[machine.id] ?? null,
        };
      }),
  };
}
