/**
 * The 405 answers of a Fastify scope computed in its not-found handler instead of routed.
 *
 * Registered as routes, the 405 answers cost one route per path and one router entry per
 * refused method and path (find-my-way keeps a tree per method): in the example app about 130
 * entries, a tenth of its start's CPU beyond bare Fastify. A scope that answers its own
 * not-found URLs matches them against this table instead, which costs nothing at start and
 * nothing on a routed request. It matches as Fastify's router does with its default options
 * (case-sensitive, no trailing or duplicate slash folding, `;` not a query delimiter);
 * {@link routesLikeTable} says whether an instance routes that way, else the scope keeps the
 * 405 routes.
 */
import type { FastifyInstance } from 'fastify';
import type { MountedRoute } from '../machine-router.js';
import { allowHeader, methodsByPath } from './shared.js';

/** A planned path split into segments: a string is literal, `null` a parameter. */
type Template = { segments: (string | null)[]; allow: string; allowed: ReadonlySet<string> };

/** The methods a known path can refuse with 405: the planned ones and HEAD; others are 404. */
const ANSWERED = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** A router option of `app`, set as `routerOptions` or (deprecated) at the top level. */
function routerOption(app: FastifyInstance, name: string): unknown {
  const config = app.initialConfig as Readonly<Record<string, unknown>> & {
    routerOptions?: Readonly<Record<string, unknown>>;
  };
  return config.routerOptions?.[name] ?? config[name];
}

/**
 * Whether `app` matches URLs as {@link MethodTable} does: the router options it reads left at
 * Fastify's defaults.
 */
export function routesLikeTable(app: FastifyInstance): boolean {
  return (
    routerOption(app, 'caseSensitive') !== false &&
    routerOption(app, 'ignoreTrailingSlash') !== true &&
    routerOption(app, 'ignoreDuplicateSlashes') !== true &&
    routerOption(app, 'useSemicolonDelimiter') !== true
  );
}

/** Fastify's `maxParamLength` of `app` (default 100). */
export function maxParamLength(app: FastifyInstance): number {
  const value = routerOption(app, 'maxParamLength');
  return typeof value === 'number' ? value : 100;
}

/** The paths of mounted routes under a prefix, with the methods each answers. */
export class MethodTable {
  readonly #templates: Template[];
  readonly #maxParamLength: number;
  /**
   * Whether two planned paths can match one URL (`/x/create` and `/x/{id}`). The router then
   * prefers the literal one for every method, a 405 route included, which the table cannot
   * know without the application's own routes: such a scope keeps its 405 routes.
   */
  readonly ambiguous: boolean;

  /**
   * @param prefix the scope's full prefix (`app.prefix`), '' at the root
   * @param maxParamLength Fastify's `maxParamLength`: a longer parameter matches no route
   */
  constructor(prefix: string, routes: readonly MountedRoute[], maxParamLength = 100) {
    this.#maxParamLength = maxParamLength;
    this.#templates = methodsByPath(routes).map(({ path, allowed }) => ({
      segments: `${prefix}${path}`
        .split('/')
        .map((segment) => (/^\{[^}]+\}$/.test(segment) ? null : segment)),
      allow: allowHeader(allowed),
      allowed: new Set(allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed),
    }));
    this.ambiguous = this.#templates.some((one, index) =>
      this.#templates.slice(index + 1).some((other) => overlap(one.segments, other.segments)),
    );
  }

  /**
   * The `Allow` header to answer `method` on `url` (a request's raw URL) with 405, or
   * `undefined` when the URL is no known path or the method is not one a path refuses.
   */
  refusal(method: string, url: string): string | undefined {
    if (!ANSWERED.has(method)) return undefined;
    const end = url.search(/[?#]/);
    const segments = (end === -1 ? url : url.slice(0, end)).split('/');
    const template = this.#templates.find((candidate) => this.#matches(candidate, segments));
    return template === undefined || template.allowed.has(method) ? undefined : template.allow;
  }

  #matches({ segments: expected }: Template, segments: readonly string[]): boolean {
    if (expected.length !== segments.length) return false;
    return expected.every((literal, index) => {
      const decoded = decode(segments[index]!);
      // A parameter may be empty (find-my-way matches `/a//b` to `/a/:id/b`).
      if (literal === null)
        return decoded !== undefined && segments[index]!.length <= this.#maxParamLength;
      return decoded === literal;
    });
  }
}

/** Whether some URL matches both templates. */
function overlap(one: readonly (string | null)[], other: readonly (string | null)[]): boolean {
  return (
    one.length === other.length &&
    one.every(
      (segment, index) => segment === null || other[index] === null || segment === other[index],
    )
  );
}

/** A percent-decoded path segment, or `undefined` when it is not valid encoding (Fastify: 400/404). */
function decode(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
