/**
 * What an instance's HTTP surface says about itself (docs/http.md "OPTIONS, Allow and
 * Machine-Events"): the `Allow` header of a path (the methods routed there, HEAD with GET,
 * OPTIONS where an OPTIONS route answers) and the `Machine-Events` header (the event types the
 * instance accepts now, from its availableEvents). OPTIONS answers carry both; a 409 of an
 * instance route (no transition, no running child) carries both too, so a generic client learns
 * from the refusal what it may send instead.
 */
import {
  ForwardTargetUnavailableException,
  NoTransitionDefinitionFoundException,
} from '../errors.js';
import type { MachineDefinitionBase } from '../definition/types.js';
import type { AvailableEvent } from '../interpreter/types.js';
import type { HttpServices } from './http-services.js';
import type { InstanceLoader } from './route-instance.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute } from './types.js';

/** The header naming the event types an instance accepts now (comma-separated, sorted). */
export const MACHINE_EVENTS_HEADER = 'machine-events';

/** Methods in the order `Allow` lists them (HEAD and OPTIONS follow them). */
const ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A path's shape: parameter names do not matter to a router (`/x/{id}` is `/x/{key}`). */
export function pathShape(path: string): string {
  return path.replace(/\{[^}]+\}/g, '{}');
}

/** The `Allow` value of a set of methods: HEAD wherever GET is routed, in a fixed order. */
export function allowValue(methods: Iterable<string>): string {
  const set = new Set(methods);
  const listed = ORDER.filter((method) => set.has(method));
  if (set.has('GET')) listed.push('HEAD');
  if (set.has('OPTIONS')) listed.push('OPTIONS');
  return listed.join(', ');
}

/**
 * The methods routed at each path of a router, as routes are mounted: handlers read it at
 * request time, so a route mounted after them (another registration at the same path) is
 * listed too.
 */
export class PathMethods {
  readonly #methods = new Map<string, Set<string>>();

  add(method: string, path: string): void {
    const shape = pathShape(path);
    let methods = this.#methods.get(shape);
    if (methods === undefined) this.#methods.set(shape, (methods = new Set()));
    methods.add(method);
  }

  /** Whether a route of `method` is mounted at `path`. */
  has(method: string, path: string): boolean {
    return this.#methods.get(pathShape(path))?.has(method) === true;
  }

  /** The `Allow` value of `path`, or `undefined` when no route is mounted there. */
  allow(path: string): string | undefined {
    const methods = this.#methods.get(pathShape(path));
    return methods === undefined ? undefined : allowValue(methods);
  }
}

/** The `Machine-Events` value of an instance's available events: each type once, sorted. */
export function machineEventsValue(events: readonly AvailableEvent[]): string {
  return [...new Set(events.map((event) => event.type))].sort().join(', ');
}

/** Whether an event route's error is a refusal by the instance's current state (409). */
export function isWrongState(error: unknown): boolean {
  return (
    error instanceof NoTransitionDefinitionFoundException ||
    error instanceof ForwardTargetUnavailableException
  );
}

/** What {@link withRefusalSurface} reads: the route, its instance loader and the services. */
export interface RefusalSurface<D extends MachineDefinitionBase> {
  definition: D;
  route: Pick<PlannedRoute, 'path'>;
  services: HttpServices<D>;
  instances: InstanceLoader;
}

/**
 * A 409 of the instance's state with `Allow` (the path's methods) and `Machine-Events` (what
 * the instance accepts now, read again: the refusal carries no snapshot; a model record without
 * a machine lists its initial state's). A failed read leaves the answer without that header.
 */
export async function withRefusalSurface<D extends MachineDefinitionBase>(
  response: EndpointResponse,
  request: EndpointRequest,
  surface: RefusalSurface<D>,
): Promise<EndpointResponse> {
  const { definition, route, services, instances } = surface;
  const headers: Record<string, string> = { ...response.headers };
  const allow = services.paths?.allow(route.path);
  if (allow !== undefined) headers['allow'] = allow;
  try {
    const current = await instances.load(request);
    const snapshot =
      current.kind === 'persisted' ? current.snapshot : services.initialSnapshot(definition);
    headers[MACHINE_EVENTS_HEADER] = machineEventsValue(
      await services.availableEvents(definition, snapshot),
    );
  } catch {
    // The refusal stands as it is.
  }
  return { ...response, headers };
}
