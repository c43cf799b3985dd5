/**
 * The OPTIONS routes of a route table (docs/http.md "OPTIONS, Allow and Machine-Events"):
 * one per path the table routes, plus `{prefix}/{machineId}` (or `{prefix}/{<model param>}`) of
 * every registration with instance routes. Pure and plain data, like `planRoutes`: the router
 * mounts them and the OpenAPI document describes them from the same function.
 */
import { authGuardsOf } from './plan-route-answers.js';
import { pathShape } from './instance-surface.js';
import type { PlannedRoute, RouteBinding } from './types.js';
import { isThirdPartyRoute } from './plan-callbacks.js';
import { pathParam } from './plan-route-fields.js';

/** One planned OPTIONS route. */
export interface OptionsRoute {
  /** `<route name>.options` of the path's first route; `<registration>.options` for the instance path. */
  name: string;
  registration: string;
  /** Definition id of the registered machine. */
  machineId: string;
  method: 'OPTIONS';
  /** OpenAPI-style path, as the routes it answers for spell it. */
  path: string;
  handler: 'options';
  /** How the instance is found; `none` for paths without one (create, stateless routes). */
  binding: RouteBinding;
  /**
   * The middleware every route at the path runs first (the registration's, in practice): an
   * OPTIONS answer tells what the instance accepts, so it is protected like the routes are.
   */
  middleware: string[];
  /** The guards of its `auth` middleware, `null` when none (as on planned routes). */
  authGuards: string[] | null;
  /** The methods the planned routes at the path answer (HEAD and OPTIONS not listed). */
  methods: string[];
}

/** The longest list every one of `lists` starts with. */
function commonPrefix(lists: readonly (readonly string[])[]): string[] {
  const [first = [], ...rest] = lists;
  let length = first.length;
  for (const list of rest) {
    let same = 0;
    while (same < length && same < list.length && list[same] === first[same]) same += 1;
    length = same;
  }
  return first.slice(0, length);
}

/** `{prefix}/{param}` of a bound route: its path up to the instance parameter. */
function instancePath(route: PlannedRoute): string | null {
  const param = pathParam(route.binding);
  if (param === null) return null;
  const marker = `{${param}}`;
  const at = route.path.indexOf(marker);
  return at === -1 ? null : route.path.slice(0, at + marker.length);
}

/**
 * The OPTIONS routes of `routes` (one or more registrations, in mount order): the first route
 * table to route a path shape gives its OPTIONS route; shapes in `taken` (mounted already)
 * get none.
 */
export function planOptionsRoutes(
  routes: readonly PlannedRoute[],
  taken: ReadonlySet<string> = new Set(),
): OptionsRoute[] {
  const groups = new Map<
    string,
    { name: string; path: string; binding: RouteBinding; routes: PlannedRoute[] }
  >();
  const add = (shape: string, name: string, path: string, route: PlannedRoute) => {
    if (taken.has(shape)) return;
    const group = groups.get(shape);
    if (group === undefined) {
      groups.set(shape, { name, path, binding: route.binding, routes: [route] });
    } else {
      group.routes.push(route);
    }
  };
  // Third parties POST to callback and webhook routes: they have no OPTIONS surface.
  const own = routes.filter((route) => !isThirdPartyRoute(route));
  for (const route of own) add(pathShape(route.path), `${route.name}.options`, route.path, route);
  // Instance paths last: a router matching in order (Express) must try `/orders/create` before
  // `/orders/{machineId}`.
  for (const route of own) {
    const instance = instancePath(route);
    if (instance !== null)
      add(pathShape(instance), `${route.registration}.options`, instance, route);
  }
  return [...groups.values()].map(({ name, path, binding, routes: members }) => {
    const middleware = commonPrefix(members.map((member) => member.middleware));
    const atPath = members.filter((member) => pathShape(member.path) === pathShape(path));
    return {
      name,
      registration: members[0]!.registration,
      machineId: members[0]!.machineId,
      method: 'OPTIONS',
      path,
      handler: 'options',
      binding,
      middleware,
      authGuards: authGuardsOf(middleware),
      methods: [...new Set(atPath.map((member) => member.method))],
    };
  });
}
