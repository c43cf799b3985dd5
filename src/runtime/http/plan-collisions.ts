/**
 * Route collisions within one registration: two routes answering the same method and path
 * shape are a planning issue, worded for what collided (the state stream, a read, endpoints).
 */
import type { PlannedRoute } from './types.js';

/** Reports, through `fail`, every route whose method and path an earlier route already answers. */
export function checkCollisions(
  routes: readonly PlannedRoute[],
  prefix: string,
  fail: (message: string, key: string) => void,
): void {
  const seen = new Map<string, string>();
  for (const route of routes) {
    const key = `${route.method} ${route.path.replace(/\{[^}]+\}/g, '{}')}`;
    const other = seen.get(key);
    if (other !== undefined && route.handler === 'events') {
      fail(
        `the state stream GET '${route.path.slice(prefix.length)}' ('stream: true') collides with the route '${other}' in the same group. Give that route another 'uri'.`,
        'stream',
      );
    } else if (other !== undefined && route.read !== null) {
      // R15: a read never shadows an endpoint of the same registration.
      fail(
        `read route GET '${route.path.slice(prefix.length)}' (read '${route.read}') collides with the existing endpoint route '${other}' in the same group. Give the read another 'uri'.`,
        route.read,
      );
    } else if (other !== undefined) {
      fail(
        `routes '${other}' and '${route.name}' both answer ${route.method} ${route.path}. Give one of them another 'uri'.`,
        route.eventType ?? 'create',
      );
    } else {
      seen.set(key, route.name);
    }
  }
}
