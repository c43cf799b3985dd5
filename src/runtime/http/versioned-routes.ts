/**
 * Pinned versions over HTTP (docs/versioning.md "HTTP"). A machine that keeps older versions
 * loaded (`versioning: 'pin'`) is routed by the newest version's route table (the one the
 * OpenAPI document and the client describe), plus the machineId-bound routes of events only an
 * older version has. A request to an instance-bound route first reads the instance's version,
 * then runs the handler built from that version's definition for the route: its endpoint (the
 * payload schema, the action hooks, the output), its available events and its reads. Where a
 * version has no endpoint for the route's event, or a route only an older version has is asked
 * for an instance of another version, the answer is 409 `PinnedVersionRouteException`
 * (`MR_PINNED_VERSION_ROUTE`), nothing sent.
 *
 * machineId-bound and model-bound routes are dispatched this way (a model-bound route first
 * finds its record through the model binder, then reads the version of the machine stored on
 * it); a record without a machine yet gets one of the newest version, and create and stateless
 * routes always start on the newest version.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { PinnedVersionRouteException } from '../errors.js';
import type { HttpServices } from './http-services.js';
import { planRegistration } from './plan-routes.js';
import { createRouteHandler } from './request-lifecycle.js';
import { errorToResponse } from './responses.js';
import { defaultHttpLogger } from './http-logger.js';
import type {
  EndpointRequest,
  ModelBinder,
  PlannedRoute,
  RegistrationOptions,
  RouteBinding,
  RouteHandler,
} from './types.js';

/** Whether `machine` keeps older versions loaded. */
export function hasPinnedVersions(machine: MachineDefinition): boolean {
  return machine.pinned !== undefined && machine.pinned.size > 0;
}

/**
 * The handler of a route of a machine with pinned versions: `newest` (the handler built from
 * the newest definition; `null` for a route only older versions have) for instances at the
 * newest version, the route's handler built from each pinned version for its instances.
 */
export function versionedHandler(
  machine: MachineDefinition,
  route: PlannedRoute,
  services: HttpServices<MachineDefinition>,
  newest: RouteHandler | null,
): RouteHandler {
  const instanceId = boundInstanceId(route.binding, services);
  if (instanceId === null) {
    if (newest === null)
      throw new Error(`Route ${route.name}: only instance-bound routes are versioned.`);
    return newest;
  }
  const byVersion = new Map<string, RouteHandler | null>();
  for (const [version, old] of machine.pinned)
    byVersion.set(version, handlerOfVersion(old, route, services, newest));
  return async (request) => {
    let id: string | null = null;
    let version: string | undefined;
    try {
      id = await instanceId(request);
      // A model record without a machine (or none at all) is the newest handler's to answer:
      // it creates a machine of the newest version, or answers 404.
      if (id !== null) version = (await services.instances.restore(machine, id)).version;
    } catch (error) {
      // Unknown ids, a closing runtime, ...: answered as the route's own handler answers them.
      if (newest !== null) return newest(request);
      return errorToResponse(
        error,
        services.logger ?? request.log ?? defaultHttpLogger,
        route.name,
        request,
      );
    }
    const pinned = version !== undefined && byVersion.has(version);
    const handler = pinned ? byVersion.get(version!)! : newest;
    if (handler !== null) return handler(request);
    return refuse(machine, route, request, id ?? '', version ?? machine.version, services);
  };
}

/**
 * How a route finds the id of its instance before its handler runs: the path parameter
 * (machineId-bound), or the machine id stored on the model record the parameter names
 * (model-bound; `null` when there is no record or it has no machine yet). `null` for routes
 * bound to no instance.
 */
function boundInstanceId(
  binding: RouteBinding,
  services: HttpServices<MachineDefinition>,
): ((request: EndpointRequest) => Promise<string | null>) | null {
  if (binding.kind === 'machineId') return async (request) => request.params[binding.param] ?? '';
  if (binding.kind !== 'model') return null;
  const binder: ModelBinder | undefined = services.models[binding.model];
  // A missing binder is the route handler's error to throw when it is built.
  if (binder === undefined) return null;
  return async (request) => {
    const record = await binder.find(request.params[binding.param] ?? '');
    if (record === null || record === undefined) return null;
    return binder.readMachineId(record, binding.attribute) || null;
  };
}

/**
 * The routes of events only pinned versions of `machine` have (events the newest version
 * dropped), each bound by machine id (only existing instances, of that version, take them: new
 * instances start on the newest), on a name, method and path the newest routes leave free.
 * `options` are the registration's; its event lists (`machineIdFor`, `only`, ...) name the
 * newest version's events, so they do not apply to these.
 */
export function pinnedOnlyRoutes(
  machine: MachineDefinition,
  options: RegistrationOptions,
  newest: readonly PlannedRoute[],
): PlannedRoute[] {
  const taken = new Set(newest.flatMap((route) => [route.name, `${route.method} ${route.path}`]));
  const newestTypes = new Set(machine.endpoints.map((entry) => entry.eventType));
  const extra: PlannedRoute[] = [];
  for (const old of machine.pinned.values()) {
    const oldOnly = old.endpoints
      .map((entry) => entry.eventType)
      .filter((type) => !newestTypes.has(type));
    if (oldOnly.length === 0) continue;
    const own: RegistrationOptions = {
      ...options,
      create: false,
      reads: null,
      stream: false,
      machineIdFor: oldOnly,
      modelFor: [],
      only: null,
      except: null,
    };
    for (const route of planRegistration(old, own).routes) {
      if (route.handler !== 'machineIdBound' || !oldOnly.includes(route.eventType ?? '')) continue;
      if (taken.has(route.name) || taken.has(`${route.method} ${route.path}`)) continue;
      taken.add(route.name);
      taken.add(`${route.method} ${route.path}`);
      extra.push(route);
    }
  }
  return extra;
}

/**
 * `route` (planned from another version) as `old` serves it: its own endpoint of the route's
 * event, or `null` when `old` has none. Reads and the state stream have no endpoint: `old`
 * serves them with its own available events and outputs, else with `fallback`.
 */
function handlerOfVersion(
  old: MachineDefinition,
  route: PlannedRoute,
  services: HttpServices<MachineDefinition>,
  fallback: RouteHandler | null,
): RouteHandler | null {
  let own: PlannedRoute = route;
  if (route.endpointIndex !== null) {
    const forwarded =
      route.handler === 'forwardedMachineIdBound' || route.handler === 'forwardedModelBound';
    const index = forwarded
      ? old.forwards.findIndex((entry) => entry.parentEventType === route.eventType)
      : old.endpoints.findIndex((entry) => entry.eventType === route.eventType);
    if (index < 0) return null;
    own = { ...route, endpointIndex: index };
  }
  try {
    return createRouteHandler(old, own, services);
  } catch {
    // The route names an output or action the old version lacks: its event routes cannot be
    // served by it (a refusal), its reads are served by the newest handler.
    return route.endpointIndex === null ? fallback : null;
  }
}

function refuse(
  machine: MachineDefinition,
  route: PlannedRoute,
  request: EndpointRequest,
  id: string,
  version: string,
  services: HttpServices<MachineDefinition>,
) {
  const event = route.eventType === null ? '' : ` (event '${route.eventType}')`;
  const pinned = machine.pinned.has(version);
  const error = new PinnedVersionRouteException(
    pinned
      ? `Machine '${id}' of '${machine.id}' is pinned to version '${version}', which has no endpoint for ${route.method} ${route.path}${event}; the route is of version '${machine.version}'. Send an event version '${version}' takes, or migrate the instance to '${machine.version}' (docs/versioning.md).`
      : `Machine '${id}' of '${machine.id}' is at version '${version}'; ${route.method} ${route.path}${event} is a route of a pinned older version only. Use the routes of version '${machine.version}' (docs/versioning.md).`,
    { machine: machine.id, key: id, version, route: route.name },
  );
  return errorToResponse(
    error,
    services.logger ?? request.log ?? defaultHttpLogger,
    route.name,
    request,
  );
}
