/**
 * The admin route group's options and their build-time check (docs/operations.md "Admin
 * routes"): the config's `admin` section and `mountAdminRoutes` take the same object, and both
 * refuse a group that names no middleware, since its routes read and repair every instance.
 */
import {
  AdminMiddlewareRequiredException,
  InvalidRouterConfigException,
  type MachineRoutesError,
} from '../../errors.js';
import { parseMiddlewareName } from '../middleware-registry.js';

/** The admin route group: where it sits and what protects it. */
export interface AdminOptions {
  /** Where its routes sit inside the app (default `/admin`: `/admin/console`, `/admin/api/...`). */
  prefix?: string;
  /**
   * Middleware of every admin route, by name as on registrations (`auth:admin`). Required and
   * non-empty: `check` and the app's start refuse the group without one.
   */
  middleware: readonly string[];
  /** The event `cancel` sends, per machine id (`{ order: 'CANCEL' }`), as `MachineOperations` takes it. */
  cancelEvents?: Readonly<Record<string, string>>;
}

/** Default `admin.prefix`. */
export const DEFAULT_ADMIN_PREFIX = '/admin';

/** `/admin/` -> `/admin`, `admin` -> `/admin`, `''` or `/` -> `''` (the app's root). */
export function adminPrefix(options: Pick<AdminOptions, 'prefix'>): string {
  const trimmed = (options.prefix ?? DEFAULT_ADMIN_PREFIX).replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `/${trimmed}`;
}

/**
 * Problems of an admin section: no middleware (`MR_ADMIN_MIDDLEWARE_REQUIRED`), middleware the
 * application does not declare (when `declared` is given), a cancel event of an unknown machine
 * (when `machines` is given).
 */
export function validateAdminOptions(
  admin: AdminOptions,
  declared?: Iterable<string>,
  machines?: Iterable<string>,
): MachineRoutesError[] {
  const middleware = Array.isArray(admin.middleware) ? (admin.middleware as string[]) : [];
  const named = middleware.filter((name) => typeof name === 'string' && name.trim() !== '');
  if (named.length === 0) {
    return [
      new AdminMiddlewareRequiredException(
        "admin: the admin route group names no middleware, and its routes read and repair every instance. Name the middleware that checks operators, e.g. admin: { middleware: ['auth:admin'] }, and declare it in the config's middleware.",
        { path: 'config.admin', key: 'middleware' },
      ),
    ];
  }
  const issues: MachineRoutesError[] = [];
  if (declared !== undefined) {
    const known = new Set(declared);
    for (const reference of named) {
      const { name } = parseMiddlewareName(reference);
      if (known.has(name)) continue;
      issues.push(
        new AdminMiddlewareRequiredException(
          `admin: middleware '${reference}' is not declared, so nothing would check the admin routes. Declare '${name}' in the config's middleware (known: ${[...known].join(', ') || '(none)'}).`,
          { path: 'config.admin', key: 'middleware' },
        ),
      );
    }
  }
  if (machines !== undefined) {
    const ids = new Set(machines);
    for (const machine of Object.keys(admin.cancelEvents ?? {})) {
      if (ids.has(machine)) continue;
      issues.push(
        new InvalidRouterConfigException(
          `admin.cancelEvents names machine '${machine}', which no registration serves. Known: ${[...ids].sort().join(', ')}.`,
          { machine, path: 'config.admin', key: 'cancelEvents' },
        ),
      );
    }
  }
  return issues;
}
