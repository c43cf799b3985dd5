/**
 * The 405 answers of a Fastify scope computed in its not-found handler instead of routed.
 *
 * Registered as routes, the 405 answers cost one route per path and one router entry per
 * refused method and path (find-my-way keeps a tree per method): in the example app about 130
 * entries, a tenth of its start's CPU beyond bare Fastify. A scope that answers its own
 * not-found URLs looks them up in a router of its planned paths instead: find-my-way, Fastify's
 * own router, with the instance's `maxParamLength`, so a URL matches a path here exactly when
 * Fastify would have routed it to that path's 405 route (a literal path before a parameter,
 * percent-decoding, query strings). It costs nothing at start (the table is built, and
 * find-my-way loaded, on the first URL no route takes) and nothing on a routed request.
 */
import type { FastifyInstance } from 'fastify';
import type FindMyWay from 'find-my-way';
import { createRequire } from 'node:module';
import { allowHeader, methodsByPath, type AnyMountedRoute } from './shared.js';

/** The methods a known path can refuse with 405: the planned ones and HEAD; others are 404. */
const ANSWERED = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** What a known path answers: the methods it allows and its `Allow` header. */
interface PathMethods {
  allowed: Set<string>;
  allow: string;
}

/** A router option of `app`, set as `routerOptions` or (deprecated) at the top level. */
function routerOption(app: FastifyInstance, name: string): unknown {
  const config = app.initialConfig as Readonly<Record<string, unknown>> & {
    routerOptions?: Readonly<Record<string, unknown>>;
  };
  return config.routerOptions !== undefined ? config.routerOptions[name] : config[name];
}

/**
 * Whether a scope of `app` can answer its refusals in its not-found handler: Fastify finds that
 * handler by the scope's prefix with a router of its own default options, so an instance that
 * folds case, slashes or semicolons in its routes would send a folded URL to another scope's
 * handler. Such an instance keeps the 405 routes.
 */
export function routesLikeTable(app: FastifyInstance): boolean {
  return (
    routerOption(app, 'caseSensitive') !== false &&
    routerOption(app, 'ignoreTrailingSlash') !== true &&
    routerOption(app, 'ignoreDuplicateSlashes') !== true &&
    routerOption(app, 'useSemicolonDelimiter') !== true
  );
}

/** Fastify's `maxParamLength` of `app` (find-my-way's default, 100, unless set). */
export function maxParamLength(app: FastifyInstance): number | undefined {
  const value = routerOption(app, 'maxParamLength');
  return typeof value === 'number' ? value : undefined;
}

// find-my-way on the first table built: Fastify loads it as CommonJS, and an ES import of it
// parsed its source again for its exports at each start (a few ms).
let findMyWay: typeof FindMyWay | undefined;

/** The paths of mounted routes under a prefix, with the methods each answers. */
export class MethodTable {
  // Every path in the GET tree: one tree matches as Fastify's per-method trees do for a path
  // that every method of the scope routes (the 405 routes made each path routable by all).
  readonly #router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>;

  /**
   * @param prefix the scope's full prefix (`app.prefix`), '' at the root
   * @param maxParamLength the instance's `maxParamLength` ({@link maxParamLength})
   */
  constructor(prefix: string, routes: readonly AnyMountedRoute[], maxParamLength?: number) {
    findMyWay ??= createRequire(import.meta.url)('find-my-way') as typeof FindMyWay;
    this.#router = findMyWay(maxParamLength === undefined ? {} : { maxParamLength });
    // methodsByPath gives one entry per shape (`/x/{id}` and `/x/{key}` are one path).
    for (const { path, allowed } of methodsByPath(routes)) {
      const methods: PathMethods = {
        allowed: new Set(allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed),
        allow: allowHeader(allowed),
      };
      // A literal ':' is written '::' in find-my-way; `{name}` becomes its `:name`.
      const pattern = `${prefix}${path}`.replaceAll(':', '::').replace(/\{([^}]+)\}/g, ':$1');
      this.#router.on('GET', pattern, () => {}, methods);
    }
  }

  /**
   * The `Allow` header to answer `method` on `url` (a request's raw URL) with 405, or
   * `undefined` when the URL is no known path or the method is not one a path refuses.
   */
  refusal(method: string, url: string): string | undefined {
    if (!ANSWERED.has(method)) return undefined;
    const methods = this.#router.find('GET', url)?.store as PathMethods | undefined;
    return methods === undefined || methods.allowed.has(method) ? undefined : methods.allow;
  }
}
