/**
 * Emits the server side for the chosen framework: one routes file per registration (its
 * planned routes as data, payload types, and a function mounting them), `machines.gen.ts`
 * (definitions taken from the config), `app.gen.ts` (`buildApp` on the runtime's store) and
 * `server.gen.ts` (an entry that listens and prints the URL and a curl to try).
 */
import type { PlannedRoute } from '../../runtime/http/types.js';
import type {
  GeneratedFile,
  ManifestRegistration,
  ManifestRoute,
  RouteManifest,
} from '../manifest.js';
import { camelCase, pascalCase, sortBy } from '../naming.js';
import { schemaToType } from '../schema-to-type.js';
import { renderTemplate } from '../templates.js';
import { payloadSchemaName } from './openapi.js';
import type { EmitOptions } from './types.js';

/** File name of a registration's routes, without directories: `order-admin.routes.gen.ts`. */
export function routesFileName(registration: ManifestRegistration): string {
  return `${registration.name.replace(/[^A-Za-z0-9_-]+/g, '-')}.routes.gen.ts`;
}

/** The planned route alone (schemas are for emitters), keys sorted so the literal reads the same for every route. */
function plannedRoute(route: ManifestRoute): PlannedRoute {
  const { payloadSchema: _payload, outputSchema: _output, ...planned } = route;
  return sortKeys(planned) as PlannedRoute;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    sortBy(Object.entries(value), ([key]) => key).map(([key, item]) => [key, sortKeys(item)]),
  );
}

function routesView(registration: ManifestRegistration, options: EmitOptions) {
  const base = pascalCase(registration.name);
  const payloads = registration.routes
    .filter((route) => route.payloadSchema !== null)
    .map((route) => ({
      name: payloadSchemaName(route),
      routeName: route.name,
      eventType: route.eventType,
      type: schemaToType(route.payloadSchema!, () => 'unknown'),
    }));
  return {
    fastify: options.framework === 'fastify',
    registration: registration.name,
    registrationLiteral: JSON.stringify(registration.name),
    machineId: registration.machineId,
    machineIdLiteral: JSON.stringify(registration.machineId),
    routeCount: registration.routes.length,
    payloads,
    routesName: `${camelCase(registration.name)}Routes`,
    registerName: `register${base}Routes`,
    routes: JSON.stringify(registration.routes.map(plannedRoute)),
  };
}

/** A route worth trying first: a create route, else a stateless one, else the first. */
function tryRoute(
  manifest: RouteManifest,
): { method: string; path: string; curlTail: string } | null {
  const routes = manifest.registrations.flatMap((registration) => registration.routes);
  const route =
    routes.find(
      (candidate) => candidate.handler === 'create' && candidate.middleware.length === 0,
    ) ??
    routes.find(
      (candidate) => candidate.binding.kind === 'none' && candidate.middleware.length === 0,
    ) ??
    null;
  if (route === null) return null;
  const body =
    route.handler === 'create' ? '' : ` -H 'content-type: application/json' -d '{"payload":{}}'`;
  return { method: route.method, path: route.path, curlTail: body };
}

/** Emits every server-side file for `options.framework`. */
export function emitHandlers(manifest: RouteManifest, options: EmitOptions): GeneratedFile[] {
  const fastify = options.framework === 'fastify';
  const registrations = manifest.registrations.map((registration) => ({
    file: routesFileName(registration),
    view: routesView(registration, options),
  }));
  return [
    ...registrations.map(({ file, view }) => ({
      path: file,
      contents: renderTemplate('routes', view),
    })),
    {
      path: 'machines.gen.ts',
      contents: renderTemplate('machines', { configModule: manifest.configModule }),
    },
    {
      path: 'app.gen.ts',
      contents: renderTemplate('app', {
        fastify,
        framework: fastify ? 'Fastify' : 'Express',
        configModule: manifest.configModule,
        registrations: registrations.map(({ file, view }) => ({
          registerName: view.registerName,
          module: file.replace(/\.ts$/, '.js'),
        })),
      }),
    },
    { path: 'server.gen.ts', contents: renderTemplate('server', { tryRoute: tryRoute(manifest) }) },
  ];
}
